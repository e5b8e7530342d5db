# openat2 RESOLVE_* flags: NO_SYMLINKS, NO_MAGICLINKS, BENEATH, IN_ROOT, NO_XDEV, CACHED
ln -s dir1 ldir; ln -s /etc/hostname abs-link; ln -s ../a.txt dir1/up-link; ln -s sub dir1/down-link
ln -s /c.txt dir1/rooted-link
python3 - <<'PY'
import ctypes, os, errno, struct
libc = ctypes.CDLL(None, use_errno=True)
SYS_openat2 = 437
NO_XDEV, NO_MAGICLINKS, NO_SYMLINKS, BENEATH, IN_ROOT, CACHED = 1, 2, 4, 8, 0x10, 0x20
def o2(dirfd, path, resolve, flags=os.O_RDONLY, mode=0):
    how = struct.pack("QQQ", flags, mode, resolve)
    fd = libc.syscall(SYS_openat2, dirfd, path.encode(), how, len(how))
    if fd < 0:
        return errno.errorcode[ctypes.get_errno()]
    data = b""
    try:
        data = os.read(fd, 20).split(b"\n")[0]
    except OSError as e:
        data = errno.errorcode[e.errno].encode()
    os.close(fd)
    return "ok " + data.decode(errors="replace")
cwd = -100
d1 = os.open("dir1", os.O_RDONLY | os.O_DIRECTORY)
root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
procfd = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
bfd = os.open("b.txt", os.O_RDONLY)
tests = [
    ("plain", cwd, "a.txt", 0),
    ("nosym file", cwd, "a.txt", NO_SYMLINKS),
    ("nosym final link", cwd, "link-to-a", NO_SYMLINKS),
    ("nosym middle link", cwd, "ldir/c.txt", NO_SYMLINKS),
    ("nosym dangling", cwd, "dangling", NO_SYMLINKS),
    ("nomagic plain link", cwd, "link-to-a", NO_MAGICLINKS),
    ("nomagic fd", cwd, f"/proc/self/fd/{bfd}", NO_MAGICLINKS),
    ("magic fd", cwd, f"/proc/self/fd/{bfd}", 0),
    ("nomagic cwd", cwd, "/proc/self/cwd/a.txt", NO_MAGICLINKS),
    ("nomagic personality", cwd, "/proc/self/personality", NO_MAGICLINKS),
    ("beneath inside", d1, "sub/d.txt", BENEATH),
    ("beneath dotdot inside", d1, "sub/../c.txt", BENEATH),
    ("beneath escape", d1, "../a.txt", BENEATH),
    ("beneath absolute", d1, "/etc/hostname", BENEATH),
    ("beneath up-link", d1, "up-link", BENEATH),
    ("beneath down-link", d1, "down-link/d.txt", BENEATH),
    ("beneath rooted-link", d1, "rooted-link", BENEATH),
    ("beneath magic", d1, f"/proc/self/fd/{bfd}", BENEATH),
    ("beneath dot", d1, ".", BENEATH),
    ("beneath dotdot", d1, "..", BENEATH),
    ("inroot inside", d1, "sub/d.txt", IN_ROOT),
    ("inroot escape", d1, "../../../c.txt", IN_ROOT),
    ("inroot up-link", d1, "up-link", IN_ROOT),
    ("inroot rooted-link", d1, "rooted-link", IN_ROOT),
    ("inroot dotdot-sub", d1, "sub/../../sub/d.txt", IN_ROOT),
    ("both", d1, "c.txt", BENEATH | IN_ROOT),
    ("noxdev same fs", cwd, "dir1/c.txt", NO_XDEV),
    ("noxdev into proc", root, "proc/self/status", NO_XDEV),
    ("noxdev abs proc", cwd, "/proc/self/status", NO_XDEV),
    ("noxdev proc dir", root, "proc", NO_XDEV),
    ("noxdev out of proc", procfd, "../etc/hostname", NO_XDEV),
    ("noxdev abs link", cwd, "abs-link", NO_XDEV),
    ("noxdev dev", root, "dev/null", NO_XDEV),
    ("cached", cwd, "a.txt", CACHED),
    ("unknown bit", cwd, "a.txt", 0x40),
    ("combined", d1, "sub/d.txt", NO_SYMLINKS | NO_MAGICLINKS | BENEATH | NO_XDEV),
]
for name, dfd, path, res in tests:
    print(name, o2(dfd, path, res))
C = os.O_CREAT | os.O_WRONLY
print("create beneath", o2(d1, "made-beneath", BENEATH, C, 0o644), os.path.exists("dir1/made-beneath"))
print("create beneath escape", o2(d1, "../escaped", BENEATH, C, 0o644), os.path.exists("escaped"))
print("create via link nosym", o2(cwd, "dangling", NO_SYMLINKS, C, 0o644), os.path.exists("nowhere"))
print("create cached", o2(cwd, "cached-new", CACHED, C, 0o644), os.path.exists("cached-new"))
print("trunc cached", o2(cwd, "a.txt", CACHED, os.O_WRONLY | os.O_TRUNC))
print("tmpfile cached", o2(d1, ".", CACHED, os.O_TMPFILE | os.O_WRONLY, 0o600))
print("tmpfile beneath", o2(d1, "sub", BENEATH, os.O_TMPFILE | os.O_WRONLY, 0o600))
print("dir beneath", o2(d1, "sub", BENEATH, os.O_RDONLY | os.O_DIRECTORY).split()[0])
PY
ls dir1
