# futimesat(fd, NULL, times) sets the times of the object fd refers to, as utimensat does;
# futimesat(AT_FDCWD, NULL, …) and utimes(NULL, …) are EFAULT
/usr/bin/python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class timeval(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("us", ctypes.c_long)]
tv = (timeval * 2)(timeval(3000, 0), timeval(4000, 500000))
def call(*a):
    r = libc.syscall(*a)
    return r, os.strerror(ctypes.get_errno()) if r else ""
fd = os.open("a.txt", os.O_RDONLY)
print(call(261, fd, None, tv), os.stat("a.txt").st_mtime)
d = os.open("dir1", os.O_RDONLY | os.O_DIRECTORY)
print(call(261, d, None, None), os.stat("dir1").st_mtime > 1e9)
print(call(261, -100, None, tv))
print(call(235, None, tv))
PY
