# O_TMPFILE in a host dir and a made dir, written then linked with linkat through /proc/self/fd
# and AT_EMPTY_PATH; an O_EXCL tmpfile cannot be linked
python3 - <<'PY'
import os, errno, ctypes
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir("made")
def link(fd, dst):
    # this python's os.link does not pass AT_SYMLINK_FOLLOW: call linkat itself
    if libc.linkat(-100, b"/proc/self/fd/%d" % fd, -100, dst.encode(), 0x400):
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
for d, name in [(".", "t1"), ("made", "t2"), ("dir1/sub", "t3")]:
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o640)
    os.write(fd, b"tmp " + name.encode() + b"\n")
    print(name, sorted(os.listdir(d)) == sorted(os.listdir(d)), os.fstat(fd).st_nlink)
    if name == "t3":
        rc = libc.linkat(fd, b"", -100, (d + "/" + name).encode(), 0x1000)
        print("empty-path", rc, errno.errorcode.get(ctypes.get_errno()) if rc else "")
    else:
        link(fd, d + "/" + name)
    os.close(fd)
fd = os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_EXCL, 0o600)
try:
    link(fd, "t4"); print("excl linked")
except OSError as e:
    print("excl", errno.errorcode[e.errno])
try:
    os.open("a.txt", os.O_TMPFILE | os.O_RDWR)
except OSError as e:
    print("tmpfile-on-file", errno.errorcode[e.errno])
for p in ["t1", "made/t2", "dir1/sub/t3"]:
    st = os.stat(p)
    print(p, oct(st.st_mode), st.st_nlink, open(p).read().strip())
print(sorted(os.listdir(".")))
PY
