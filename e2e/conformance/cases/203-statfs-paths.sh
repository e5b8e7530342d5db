# statfs of paths inside the tree, of files made, removed and renamed in it (f_type, f_bsize)
python3 - <<'PY'
import os, ctypes, errno
open("made", "w").write("x")
os.mkdir("newdir")
os.rename("a.txt", "moved.txt")
for p in [".", "b.txt", "made", "newdir", "moved.txt", "a.txt", "dangling", "link-to-a", "fifo", "dir-ro/e.txt"]:
    try:
        s = os.statvfs(p)
        print(p, s.f_bsize, s.f_namemax, s.f_frsize)
    except OSError as e:
        print(p, errno.errorcode[e.errno])
class S(ctypes.Structure):
    _fields_ = [("f_type", ctypes.c_long), ("f_bsize", ctypes.c_long), ("rest", ctypes.c_long * 14)]
libc = ctypes.CDLL(None, use_errno=True)
for p in [b".", b"made", b"a.txt", b"newdir", b"dangling"]:
    s = S()
    rc = libc.statfs(p, ctypes.byref(s))
    print(p.decode(), rc, errno.errorcode.get(ctypes.get_errno()) if rc else hex(s.f_type), s.f_bsize if rc == 0 else "")
PY
df --output=fstype,target . made | tail -n +2 | sed 's/ \+/ /g'
stat -f -c '%T %s %l' . made dir1
