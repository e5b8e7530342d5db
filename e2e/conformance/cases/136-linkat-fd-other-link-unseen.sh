# linkat(AT_EMPTY_PATH) of a descriptor whose name was removed, the file's other name never
# looked up in the transaction: the new name joins the remaining one
/usr/bin/python3 -c '
import os, ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("hard-a", os.O_RDONLY)
os.unlink("hard-a")
os.fchmod(fd, 0o640)
r = libc.linkat(fd, b"", -100, b"dir1/h3", 0x1000)
print("linkat", r, errno.errorcode.get(ctypes.get_errno()) if r else "")
os.chmod("dir1/h3", 0o604)'
stat -c '%n %h %a' dir1/h3
