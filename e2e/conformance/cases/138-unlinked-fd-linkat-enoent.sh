# a file unlinked in the transaction, held by a read-only descriptor: reopened for writing through
# /proc/self/fd it takes writes, fchmod works, linkat(AT_EMPTY_PATH) fails with ENOENT (no link
# left); none of it is committed
/usr/bin/python3 -c '
import os, ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("b.txt", os.O_RDONLY)
os.unlink("b.txt")
w = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND); os.write(w, b"more\n")
os.fchmod(fd, 0o644)
r = libc.linkat(fd, b"", -100, b"b3", 0x1000)
print("linkat", r, errno.errorcode.get(ctypes.get_errno()) if r else "")
print(os.read(os.open(f"/proc/self/fd/{fd}", os.O_RDONLY), 100))'
ls
