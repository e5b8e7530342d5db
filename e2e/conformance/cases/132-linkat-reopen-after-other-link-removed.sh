# linkat(AT_EMPTY_PATH) and reopening for writing through /proc/self/fd, on a descriptor whose
# name was removed while the file keeps another
/usr/bin/python3 -c '
import os, ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("b.txt", os.O_RDONLY)
os.link("b.txt", "b2"); os.unlink("b.txt")
r = libc.linkat(fd, b"", -100, b"b3", 0x1000)
print("linkat", r, errno.errorcode.get(ctypes.get_errno()) if r else "")
try:
    w = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND); os.write(w, b"more\n"); print("reopen ok")
except OSError as e:
    print("reopen", errno.errorcode[e.errno])'
cat b2
stat -c '%n %h' b2 b3
