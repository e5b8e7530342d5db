# descriptors on files unlinked while open: read, write, fchmod, futimens, fstat, ftruncate
python3 - <<'PY'
import os, errno
def t(label, f, *a):
    try:
        r = f(*a); print(label, "ok" if r is None else r)
    except OSError as e:
        print(label, errno.errorcode[e.errno])
fd = os.open("b.txt", os.O_RDWR)
os.unlink("b.txt")
t("read", os.read, fd, 100)
t("fchmod", os.fchmod, fd, 0o640)
t("futimens", os.utime, fd, (1, 2))
t("fchown", os.fchown, fd, 1000, -1)
t("write", os.write, fd, b"X")
t("ftruncate", os.ftruncate, fd, 2)
t("fsetxattr", os.setxattr, fd, "user.a", b"b")
st = os.stat(fd); print(st.st_nlink, oct(st.st_mode & 0o777), st.st_size)
os.close(fd)
fd = os.open("newtmp", os.O_CREAT | os.O_RDWR, 0o600)
os.unlink("newtmp")
t("new fchmod", os.fchmod, fd, 0o644)
t("new futimens", os.utime, fd, (3, 4))
t("new write", os.write, fd, b"abc")
st = os.stat(fd); print(st.st_nlink, oct(st.st_mode & 0o777), st.st_size)
os.close(fd)
fd = os.open("dir1/c.txt", os.O_RDONLY)
os.unlink("dir1/c.txt"); os.rmdir("dir1/sub") if False else None
print(os.read(fd, 100))
print(os.stat(fd).st_nlink)
os.close(fd)
d = os.open("empty", os.O_RDONLY)
os.rmdir("empty")
t("rmdir'd listdir", os.listdir, d)
t("rmdir'd create", lambda: os.open("x", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=d))
os.close(d)
PY
ls
