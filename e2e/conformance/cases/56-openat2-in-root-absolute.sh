# openat2 RESOLVE_IN_ROOT with an absolute path: the path starts at dirfd,
# not at the process root (the one case where dirfd matters for "/...").
ln -s /c.txt dir1/rooted-link
python3 - <<'PY'
import ctypes, os, errno, struct
libc = ctypes.CDLL(None, use_errno=True)
IN_ROOT, BENEATH = 0x10, 0x08
def o2(dirfd, path, resolve, flags=os.O_RDONLY, mode=0):
    how = struct.pack("QQQ", flags, mode, resolve)
    fd = libc.syscall(437, dirfd, path.encode(), how, len(how))
    if fd < 0:
        return errno.errorcode[ctypes.get_errno()]
    os.close(fd)
    return "ok"
d1 = os.open("dir1", os.O_RDONLY | os.O_DIRECTORY)
print("inroot absolute", o2(d1, "/c.txt", IN_ROOT))
print("inroot absolute dotdot", o2(d1, "/../sub/d.txt", IN_ROOT))
print("inroot absolute link", o2(d1, "/rooted-link", IN_ROOT))
print("beneath absolute", o2(d1, "/c.txt", BENEATH))
print("create inroot abs", o2(d1, "/made-inroot", IN_ROOT, os.O_CREAT | os.O_WRONLY, 0o644))
print(sorted(os.listdir("dir1")), os.path.exists("made-inroot"))
PY
