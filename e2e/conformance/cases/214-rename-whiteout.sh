# renameat2 RENAME_WHITEOUT (root): the source becomes a 0/0 character device; combined with
# NOREPLACE; then the whiteout is removed and the name reused
python3 - <<'PY'
import ctypes, os, stat, errno
libc = ctypes.CDLL(None, use_errno=True)
def r2(a, b, fl):
    rc = libc.renameat2(-100, a.encode(), -100, b.encode(), fl)
    print(a, b, fl, "ok" if rc == 0 else errno.errorcode[ctypes.get_errno()])
def show(p):
    s = os.lstat(p)
    print(p, stat.filemode(s.st_mode), os.major(s.st_rdev), os.minor(s.st_rdev), s.st_size)
r2("a.txt", "wa.txt", 4)
show("a.txt"); show("wa.txt")
open("made", "w").write("m")
r2("made", "b.txt", 4 | 1)
r2("made", "made2", 4 | 1)
show("made")
r2("dir1", "dir1b", 4)
show("dir1"); print(sorted(os.listdir("dir1b")))
r2("made2", "made", 4 | 2)
os.unlink("a.txt"); open("a.txt", "w").write("again\n"); show("a.txt")
os.rmdir("empty") if False else None
print(sorted(os.listdir(".")))
PY
