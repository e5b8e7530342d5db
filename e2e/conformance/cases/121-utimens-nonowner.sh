# utimensat by a non-owner with write permission: NULL and NOW/NOW allowed, NOW/OMIT and
# OMIT/OMIT and explicit times per Linux's rules; same for a read-only file
echo x > w666 && chmod 666 w666 && echo y > r644 && chmod 644 r644
touch -d '2001-01-01 UTC' w666 r644
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 - <<'PY'
import ctypes, os, errno
libc = ctypes.CDLL(None, use_errno=True)
class ts(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
NOW, OMIT = (1 << 30) - 1, (1 << 30) - 2
def u(p, a, m):
    t = None if a is None else (ts * 2)(ts(0, a) if a in (NOW, OMIT) else ts(a, 0), ts(0, m) if m in (NOW, OMIT) else ts(m, 0))
    r = libc.utimensat(-100, p.encode(), t, 0)
    return "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]
for p in ["w666", "r644"]:
    for name, a, m in [("null", None, None), ("now-now", NOW, NOW), ("explicit-now", 5, NOW),
                       ("omit-omit", OMIT, OMIT), ("explicit", 5, 6), ("expl-omit", 5, OMIT)]:
        print(p, name, u(p, a, m))
    fd = os.open(p, os.O_RDONLY)
    r = libc.futimens(fd, None)
    print(p, "futimens-null-ro-fd", "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
    os.close(fd)
PY
stat -c '%n %s' w666 r644
