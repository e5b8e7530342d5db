# openat2 refuses what open(2) silently drops: O_PATH with flags other than O_DIRECTORY,
# O_NOFOLLOW, O_CLOEXEC; unknown flag bits; a mode without O_CREAT/O_TMPFILE
/usr/bin/python3 - <<'PY'
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
def openat2(path, flags, mode=0, resolve=0):
    how = struct.pack("QQQ", flags, mode, resolve)
    r = libc.syscall(437, -100, path.encode(), how, len(how))
    if r < 0:
        return os.strerror(ctypes.get_errno())
    os.close(r)
    return "ok"
for name, flags, mode in [
    ("path", os.O_PATH, 0),
    ("path|dir|nofollow|cloexec", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, 0),
    ("path|rdwr", os.O_PATH | os.O_RDWR, 0),
    ("path|nonblock", os.O_PATH | os.O_NONBLOCK, 0),
    ("path|creat", os.O_PATH | os.O_CREAT, 0o644),
    ("unknown bit", 1 << 30, 0),
    ("mode without creat", os.O_RDONLY, 0o644),
]:
    print(name, openat2("dir1" if "dir" in name else "a.txt", flags, mode))
print("open path|rdwr", "ok" if os.close(os.open("a.txt", os.O_PATH | os.O_RDWR)) is None else "")
PY
ls
