# explicit times: touch -d/-r/-a/-m/-h, utimensat with UTIME_OMIT and UTIME_NOW
touch -d '2005-06-07 08:09:10.123456789 UTC' a.txt
stat -c '%x|%y' a.txt hard-a
touch -r a.txt b.txt
stat -c '%X %Y' b.txt
touch -m -d '2010-01-01 00:00:00 UTC' ro.txt
touch -a -d '2011-01-01 00:00:00 UTC' ro.txt
stat -c '%X %Y' ro.txt
touch -h -d '2012-02-02 00:00:00 UTC' link-to-a dangling
stat -c '%n %Y' link-to-a dangling a.txt
touch -d '2003-03-03 00:00:00 UTC' dir1 new-touched
stat -c '%n %Y' dir1 new-touched
touch -d '2004-04-04 UTC' dir1/sub/d.txt
stat -c '%Y' dir1
python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class ts(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
AT_FDCWD = -100
def utimens(path, a, m, flags=0):
    t = (ts * 2)(ts(*a), ts(*m))
    r = libc.utimensat(AT_FDCWD, path.encode(), t, flags)
    return "ok" if r == 0 else os.strerror(ctypes.get_errno())
print(utimens("exec.sh", (1234567890, 5), (0, UTIME_OMIT)))
st = os.stat("exec.sh"); print(st.st_atime_ns, st.st_mtime_ns)
print(utimens("exec.sh", (0, UTIME_OMIT), (987654321, 7)))
st = os.stat("exec.sh"); print(st.st_atime_ns, st.st_mtime_ns)
print(utimens("exec.sh", (0, UTIME_OMIT), (0, UTIME_OMIT)))
print(utimens("missing", (0, UTIME_OMIT), (0, UTIME_OMIT)))
print(utimens("exec.sh", (0, UTIME_NOW), (0, UTIME_OMIT)))
st = os.stat("exec.sh"); print(st.st_atime > 1577836800, st.st_mtime_ns)
os.utime("big.bin", ns=(111, 222000000333))
st = os.stat("big.bin"); print(st.st_atime_ns, st.st_mtime_ns)
fd = os.open("sp ace.txt", os.O_RDONLY)
os.utime(fd, ns=(5 * 10**9, 6 * 10**9))
print(os.fstat(fd).st_mtime_ns, os.stat("sp ace.txt").st_mtime_ns)
os.close(fd)
os.utime("empty", (1, 2))
print(os.stat("empty").st_mtime)
PY
setpriv --reuid 1000 --regid 1000 --clear-groups touch -d '2001-01-01 UTC' a.txt 2>&1
setpriv --reuid 1000 --regid 1000 --clear-groups touch user.txt; stat -c '%Y' user.txt | cut -c1-2
