# /proc/self/fd links and getcwd for objects whose names were removed or moved
python3 - <<'PY'
import os, errno
top = os.getcwd()
def fdlink(fd):
    return os.readlink(f"/proc/self/fd/{fd}").replace(top, "TOP")
a = os.open("b.txt", os.O_RDONLY)
n = os.open("newf", os.O_CREAT | os.O_WRONLY, 0o644)
h = os.open("a.txt", os.O_RDONLY)
d = os.open("dir1/sub", os.O_RDONLY)
print(fdlink(a), fdlink(n), fdlink(h), fdlink(d))
os.unlink("b.txt"); os.unlink("newf"); os.unlink("a.txt"); os.rename("dir1", "dir1-moved")
print(fdlink(a), fdlink(n), fdlink(h), fdlink(d))
os.rmdir("empty") 
e = os.open("dir-ro", os.O_RDONLY)
os.mkdir("gone"); os.chdir("gone"); os.rmdir("../gone")
try:
    os.getcwd()
except OSError as x:
    print("getcwd", errno.errorcode[x.errno])
print(os.readlink("/proc/self/cwd").replace(top, "TOP"))
os.chdir(top)
os.rename("dir-ro", "dir-ro2")
print(fdlink(e))
PY
