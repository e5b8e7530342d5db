# shutil.rmtree of a tree with read-only directories, as root and as an unprivileged user
# (onerror/onexc fixing permissions), and os.walk/scandir after renames
python3 - <<'PY'
import os, shutil, stat
def mk(base):
    os.makedirs(base + "/a/b/c")
    for d in ["", "/a", "/a/b", "/a/b/c"]:
        open(base + d + "/f", "w").close()
    os.chmod(base + "/a/b", 0o555); os.chmod(base + "/a", 0o555)
mk("rt"); shutil.rmtree("rt"); print("root rmtree", os.path.exists("rt"))
mk("userdir/ut")
os.system("chown -R 1000:1000 userdir/ut")
pid = os.fork()
if pid == 0:
    os.setgroups([]); os.setresgid(1000,1000,1000); os.setresuid(1000,1000,1000)
    errs = []
    shutil.rmtree("userdir/ut", onerror=lambda f, p, e: errs.append((f.__name__, os.path.relpath(p, "userdir"), e[1].errno)))
    print("user errors", sorted(errs))
    def fix(f, p, e):
        os.chmod(os.path.dirname(p), 0o755); f(p)
    shutil.rmtree("userdir/ut", onerror=fix)
    print("user rmtree", os.path.exists("userdir/ut"))
    os._exit(0)
os.waitpid(pid, 0)
os.makedirs("w/x/y"); open("w/x/y/f1", "w").close(); open("w/x/f2", "w").close()
os.rename("w/x/y", "w/y"); os.rename("w/x", "w/y/x")
for root, dirs, files in os.walk("w"):
    dirs.sort(); print(root, sorted(dirs), sorted(files))
for root, dirs, files in os.walk("w", topdown=False):
    print(root, sorted(files))
PY
