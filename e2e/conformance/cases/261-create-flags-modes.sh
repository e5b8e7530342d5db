# Creates with unusual flags and modes, as root and as a user: O_RDONLY|O_CREAT of mode 0 still
# reads, O_APPEND|O_TRUNC, set-ID bits, O_TMPFILE + link, set-group-ID directories, FIFOs and
# symlinks; owner, group and mode as Linux gives them.
umask 022
python3 - <<'PY'
import os, stat
def show(p):
    st = os.lstat(p); print(p, oct(st.st_mode), st.st_uid, st.st_gid, st.st_size)
fd = os.open("ro0", os.O_CREAT|os.O_RDONLY, 0); print("read", os.read(fd, 4)); os.close(fd); show("ro0")
fd = os.open("app", os.O_CREAT|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o600); os.write(fd, b"ab"); os.close(fd)
fd = os.open("app", os.O_CREAT|os.O_WRONLY|os.O_APPEND, 0o600); os.write(fd, b"cd"); os.close(fd); show("app"); print(open("app").read())
fd = os.open("sync", os.O_CREAT|os.O_WRONLY|os.O_SYNC|os.O_NONBLOCK|os.O_DSYNC, 0o4755); os.write(fd, b"x"); print(oct(os.fstat(fd).st_mode)); os.close(fd); show("sync")
try:
    os.open("app", os.O_CREAT|os.O_EXCL|os.O_RDWR, 0o644)
except OSError as e: print("excl", e.errno)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(".", os.O_TMPFILE|os.O_RDWR, 0o640); os.write(fd, b"tmp")
# linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD, name, AT_SYMLINK_FOLLOW)
print("linkat", libc.linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, b"tmplinked", 0x400)); os.close(fd); show("tmplinked")
os.mkdir("sg", 0o777); os.chmod("sg", 0o2777); os.chown("sg", 0, 4343)
os.mkdir("sg/sub", 0o1755); show("sg/sub")
fd = os.open("sg/f", os.O_CREAT|os.O_WRONLY, 0o2755); os.close(fd); show("sg/f")
os.mkfifo("sg/fifo", 0o640); show("sg/fifo")
os.symlink("target", "sg/ln"); show("sg/ln")
PY
chmod 777 . sg
setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'umask 002; echo u > sg/uf; mkdir sg/ud; mkdir -m 4775 ud2; install -m 2755 /dev/null sg/inst; mkfifo -m 666 ufifo; ln -s x sg/uln' 2>&1
for f in sg/uf sg/ud ud2 sg/inst ufifo sg/uln; do stat -c '%n %A %u %g' $f; done
ls -ld sg | cut -c1-10
