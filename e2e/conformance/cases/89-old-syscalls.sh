# legacy calls through syscall(2): utime, utimes, futimesat, creat, mknod (regular, FIFO,
# char device, socket), getcwd, truncate, access, lchown
/usr/bin/python3 - <<'PY'
import ctypes, os, errno, stat
libc = ctypes.CDLL(None, use_errno=True)
sc = libc.syscall
def r(label, v):
    print(label, "ok" if v >= 0 else errno.errorcode[ctypes.get_errno()])
class utimbuf(ctypes.Structure):
    _fields_ = [("a", ctypes.c_long), ("m", ctypes.c_long)]
class timeval(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("us", ctypes.c_long)]
r("utime", sc(132, b"a.txt", ctypes.byref(utimbuf(1000, 2000))))
print(os.stat("a.txt").st_mtime, os.stat("hard-a").st_atime)
tv = (timeval * 2)(timeval(3000, 5), timeval(4000, 7))
r("utimes", sc(235, b"b.txt", tv))
print(os.stat("b.txt").st_mtime_ns)
d = os.open("dir1", os.O_RDONLY)
r("futimesat", sc(261, d, b"c.txt", tv))
print(os.stat("dir1/c.txt").st_mtime_ns)
r("utime-null", sc(132, b"ro.txt", None))
print(os.stat("ro.txt").st_mtime > 1577836800)
fd = sc(85, b"created", 0o640)
r("creat", fd); os.write(fd, b"via creat\n"); os.close(fd)
fd = sc(85, b"created", 0o600)
r("creat-again", fd); os.close(fd)
print(os.stat("created").st_size, oct(os.stat("created").st_mode))
r("mknod-reg", sc(133, b"mk-reg", stat.S_IFREG | 0o600, 0))
r("mknod-zero-type", sc(133, b"mk-zero", 0o644, 0))
r("mknod-fifo", sc(133, b"mk-fifo", stat.S_IFIFO | 0o600, 0))
r("mknod-chr", sc(133, b"mk-null", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
r("mknod-sock", sc(133, b"mk-sock", stat.S_IFSOCK | 0o600, 0))
r("mknod-dir", sc(133, b"mk-dir", stat.S_IFDIR | 0o755, 0))
r("mknod-exists", sc(133, b"a.txt", stat.S_IFREG | 0o600, 0))
for p in ["mk-reg", "mk-zero", "mk-fifo", "mk-null", "mk-sock"]:
    st = os.lstat(p); print(p, stat.filemode(st.st_mode), os.major(st.st_rdev), os.minor(st.st_rdev))
fd = os.open("mk-null", os.O_WRONLY); print("write null", os.write(fd, b"gone")); os.close(fd)
print("read null", open("mk-null", "rb").read())
buf = ctypes.create_string_buffer(4096)
os.chdir("dir1/sub")
n = sc(79, buf, 4096)
print("getcwd", n, buf.value.decode().rsplit("/", 2)[1:])
n = sc(79, buf, 3)
r("getcwd-small", n)
os.chdir("../..")
r("truncate", sc(76, b"big.bin", 10))
r("truncate-dir", sc(76, b"dir1", 10))
r("truncate-neg", sc(76, b"a.txt", -1))
r("access-x", sc(21, b"exec.sh", 1))
r("lchown", sc(94, b"link-to-a", 1000, 1000))
print(os.lstat("link-to-a").st_uid, os.stat("a.txt").st_uid)
r("chown-follow", sc(92, b"link-to-a", 1001, -1))
print(os.lstat("link-to-a").st_uid, os.stat("a.txt").st_uid)
r("link", sc(86, b"b.txt", b"b-link"))
r("symlink", sc(88, b"target", b"sym"))
r("rmdir-file", sc(84, b"a.txt"))
r("unlink-dir", sc(87, b"dir1"))
r("rename", sc(82, b"sym", b"sym2"))
r("mkdir", sc(83, b"md", 0o700))
r("chmod", sc(90, b"md", 0o750))
r("readlink", sc(89, b"sym2", buf, 4096)); print(buf.value[:6])
PY
ls
