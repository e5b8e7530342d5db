# reading a host directory a few entries at a time (small getdents64 buffers) while
# the transaction creates and removes entries in it: every untouched entry is seen once
/usr/bin/python3 - <<'PY'
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
def chunk(fd, size=64):
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(217, fd, buf, size)
    if n < 0:
        raise OSError(ctypes.get_errno(), "getdents64")
    out, i = [], 0
    while i < n:
        reclen = struct.unpack_from("H", buf.raw, i + 16)[0]
        out.append(buf.raw[i + 19:i + reclen].split(b"\0")[0].decode())
        i += reclen
    return out
fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
seen = chunk(fd) + chunk(fd)
open("created-meanwhile", "w").close()
while True:
    c = chunk(fd)
    if not c:
        break
    seen += c
os.close(fd)
host = sorted(n for n in seen if n not in (".", "..", "created-meanwhile"))
print(len(host), len(set(host)), host)
fd = os.open("dir1", os.O_RDONLY | os.O_DIRECTORY)
first = chunk(fd, 40)
os.unlink("a.txt")
rest = []
while True:
    c = chunk(fd, 40)
    if not c:
        break
    rest += c
print(sorted(first + rest))
os.close(fd)
PY
