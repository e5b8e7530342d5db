# attribute calls on descriptors whose file was linked, renamed or re-linked since it was opened
python3 - <<'PY'
import os, errno
def t(label, f, *a):
    try:
        f(*a); print(label, "ok")
    except OSError as e:
        print(label, errno.errorcode[e.errno])
fd = os.open(".", os.O_TMPFILE | os.O_RDWR, 0o600)
os.write(fd, b"tmp\n")
os.link(f"/proc/self/fd/{fd}", "named1")
t("fchmod after link", os.fchmod, fd, 0o640)
os.link("named1", "named2")
os.unlink("named1")
t("futimens after relink", os.utime, fd, (7, 8))
t("fchmod after relink", os.fchmod, fd, 0o604)
os.close(fd)
fd = os.open("b.txt", os.O_RDONLY)
os.rename("b.txt", "dir1/b-moved")
t("fchmod after rename", os.fchmod, fd, 0o606)
os.rename("dir1", "dir1-moved")
t("futimens after parent rename", os.utime, fd, (9, 10))
os.close(fd)
fd = os.open("new", os.O_CREAT | os.O_WRONLY, 0o644)
os.rename("new", "new2")
os.link("new2", "new3")
os.unlink("new2")
t("fchmod new relinked", os.fchmod, fd, 0o611)
t("fchown new relinked", os.fchown, fd, 1000, 1000)
t("ftruncate new relinked", os.ftruncate, fd, 3)
t("fsetxattr new relinked", os.setxattr, fd, "user.x", b"1")
os.close(fd)
fd = os.open("exec.sh", os.O_RDONLY)
os.rename("exec.sh", "ro.txt")
t("fchmod over-renamed", os.fchmod, fd, 0o700)
os.close(fd)
for p in ["named2", "dir1-moved/b-moved", "new3", "ro.txt"]:
    st = os.stat(p); print(p, oct(st.st_mode & 0o7777), st.st_mtime, st.st_size, st.st_uid)
PY
