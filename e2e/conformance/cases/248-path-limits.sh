# name and path limits: a 255-byte name works, 256 is ENAMETOOLONG, a symlink chain of 40
# hops resolves and 41 is ELOOP, a self loop, a path near PATH_MAX through many dirs
python3 - <<'PY'
import os, errno
def t(label, f, *a, **k):
    try: r = f(*a, **k); print(label, "ok" if r is None else r)
    except OSError as e: print(label, errno.errorcode[e.errno])
n255, n256 = "a" * 255, "b" * 256
t("create 255", lambda: os.close(os.open(n255, os.O_CREAT | os.O_WRONLY)))
t("create 256", lambda: os.close(os.open(n256, os.O_CREAT | os.O_WRONLY)))
t("stat 256", os.stat, n256)
t("stat 256 under missing", os.stat, "missing/" + n256)
t("mkdir 256", os.mkdir, n256)
t("rename to 256", os.rename, n255, n256)
t("symlink to long target", os.symlink, "x" * 4095, "longtarget")
t("symlink to too long target", os.symlink, "x" * 4096, "longtarget2")
t("readlink long", lambda: len(os.readlink("longtarget")))
os.symlink("a.txt", "l0")
for i in range(1, 42):
    os.symlink("l%d" % (i - 1), "l%d" % i)
t("chain 40", lambda: open("l39").read().strip())
t("chain 41", lambda: open("l40").read().strip())
t("lstat chain 41", lambda: os.path.islink("l41"))
os.symlink("self", "self")
t("self loop", os.stat, "self")
t("self loop slash", os.stat, "self/")
t("loop creat", os.open, "self", os.O_CREAT | os.O_WRONLY)
os.symlink("lp2", "lp1"); os.symlink("lp1", "lp2")
t("two loop", os.stat, "lp1")
t("mkdir through loop", os.mkdir, "lp1/x")
d = "deep"
os.mkdir(d)
comp = "c" * 200
path = d
while len(path) + len(comp) + 1 < 4090:
    path += "/" + comp
    os.mkdir(path)
print("deep len", len(path))
t("create near max", lambda: os.close(os.open(path + "/f", os.O_CREAT | os.O_WRONLY)))
t("create over max", lambda: os.close(os.open(path + "/" + "f" * 10, os.O_CREAT | os.O_WRONLY)))
t("relative from deep", lambda: os.stat(path + "/../" + comp + "/f").st_size)
os.chdir(path)
t("getcwd deep", lambda: len(os.getcwd()) > 4000)
t("dotdots", lambda: os.stat("/".join([".."] * path.count("/")) + "/../a.txt").st_size)
PY
rm -rf deep
