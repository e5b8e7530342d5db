# utimensat by a non-owner: NULL times or UTIME_NOW for both need only write permission;
# anything else — UTIME_NOW with UTIME_OMIT (touch -a, touch -m), explicit times — needs
# ownership (EPERM); UTIME_OMIT for both does nothing, not even look at the path
echo x > w666 && chmod 666 w666 && touch -d '2001-01-01 UTC' w666
echo y > r644 && chmod 644 r644 && touch -d '2001-01-01 UTC' r644
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 - <<'PY'
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
NOW, OMIT = (1 << 30) - 1, (1 << 30) - 2
class TS(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
def t(label, path, times):
    arg = None if times is None else (TS * 2)(*[TS(s, n) for s, n in times])
    r = libc.utimensat(-100, path.encode(), arg, 0)
    print(label, "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
for p in ("w666", "r644"):
    t(p + " omit-omit", p, [(0, OMIT), (0, OMIT)])
    t(p + " now-omit", p, [(0, NOW), (0, OMIT)])
    t(p + " omit-now", p, [(0, OMIT), (0, NOW)])
    t(p + " explicit", p, [(5, 0), (5, 0)])
    t(p + " explicit-now", p, [(5, 0), (0, NOW)])
    t(p + " now-now", p, [(0, NOW), (0, NOW)])
    t(p + " null", p, None)
t("missing omit-omit", "missing", [(0, OMIT), (0, OMIT)])
t("missing now-omit", "missing", [(0, NOW), (0, OMIT)])
t("owned explicit", "user.txt", [(7, 0), (7, 0)])
t("owned now-omit", "user.txt", [(0, OMIT), (0, NOW)])
PY
stat -c '%n %X' user.txt r644
touch -d '2001-01-01 UTC' w666
