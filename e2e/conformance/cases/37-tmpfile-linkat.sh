# O_TMPFILE then linkat, through /proc/self/fd (EXDEV on kernels that refuse
# following a magic link to a file in linkat) and with AT_EMPTY_PATH
python3 - <<'PY'
import os, errno, ctypes
libc = ctypes.CDLL(None, use_errno=True)
def link_fd(fd, name):
    try:
        os.link(f"/proc/self/fd/{fd}", name, follow_symlinks=True)
        return "proc-link ok"
    except OSError as e:
        r = libc.linkat(fd, b"", -100, name.encode(), 0x1000)
        return "proc-link " + errno.errorcode[e.errno] + ", empty-path " + (os.strerror(ctypes.get_errno()) if r else "ok")
fd = os.open("dir1", os.O_TMPFILE | os.O_WRONLY, 0o640)
os.write(fd, b"tmpfile data\n")
print(sorted(os.listdir("dir1")), os.fstat(fd).st_nlink)
print(link_fd(fd, "dir1/named"))
print(open("dir1/named").read(), end="")
print(oct(os.stat("dir1/named").st_mode), os.fstat(fd).st_nlink, os.stat("dir1/named").st_nlink)
os.write(fd, b"after link\n")
print(link_fd(fd, "second-name"), os.stat("dir1/named").st_nlink)
os.close(fd)
print(open("dir1/named").read(), end="")
fd = os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_EXCL, 0o600)
print("excl:", link_fd(fd, "excl"))
os.close(fd)
fd = os.open("dir1", os.O_TMPFILE | os.O_WRONLY, 0o644)
os.close(fd)
for p, fl in [("a.txt", os.O_TMPFILE | os.O_WRONLY), ("missing", os.O_TMPFILE | os.O_WRONLY),
              ("dir1", os.O_TMPFILE | os.O_RDONLY), ("dir-ro", os.O_TMPFILE | os.O_WRONLY)]:
    try:
        os.close(os.open(p, fl, 0o600)); print(p, "ok")
    except OSError as e:
        print(p, errno.errorcode[e.errno])
fd = os.open("b.txt", os.O_RDONLY)
print("existing file:", link_fd(fd, "b-again"))
os.close(fd)
print(sorted(os.listdir("dir1")), sorted(os.listdir(".")))
PY
cat second-name b-again 2>&1
stat -c '%h' b.txt
