# errno corners of the stat family (fs/stat.c): statx refuses unknown flag bits and both sync
# types (EINVAL) before the lookup and the path's copy-in, but a descriptor stat of itself
# (AT_EMPTY_PATH with "" or NULL) ignores unknown bits; NULL without AT_EMPTY_PATH is EFAULT;
# newfstatat accepts the sync types; readlinkat(fd, "") of a non-symlink is ENOENT
ln -s a.txt lnk
/usr/bin/python3 - <<'PY'
import ctypes, os, errno
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(4096)
def r(label, *a):
    v = libc.syscall(*a)
    print(label, v if v >= 0 else errno.errorcode[ctypes.get_errno()])
f = os.open("a.txt", os.O_RDONLY)
d = os.open("dir1", os.O_RDONLY)
l = os.open("lnk", os.O_PATH | os.O_NOFOLLOW)
bad = ctypes.c_void_p(1)
for fl in [0x6000, 0x400, 0x8000, 0x80000000, 0x2000, 0x4000, 0x800]:
    r("statx %#x" % fl, 332, -100, b"a.txt", fl, 0x7ff, buf)
r("statx missing badflag", 332, -100, b"missing", 0x8000, 0x7ff, buf)
r("statx badptr badflag", 332, -100, bad, 0x8000, 0x7ff, buf)
r("statx badptr", 332, -100, bad, 0, 0x7ff, buf)
r("statx fd '' empty badflag", 332, f, b"", 0x1000 | 0x8000, 0x7ff, buf)
r("statx fd NULL empty badflag", 332, f, None, 0x1000 | 0x8000, 0x7ff, buf)
r("statx fd NULL empty both-sync", 332, f, None, 0x1000 | 0x6000, 0x7ff, buf)
r("statx fd NULL", 332, f, None, 0, 0x7ff, buf)
r("statx fd NULL badflag", 332, f, None, 0x8000, 0x7ff, buf)
r("statx cwd NULL empty", 332, -100, None, 0x1000, 0x7ff, buf)
r("statx cwd NULL empty badflag", 332, -100, None, 0x1000 | 0x8000, 0x7ff, buf)
r("statx fd '' no-empty", 332, f, b"", 0, 0x7ff, buf)
r("statx reserved mask", 332, -100, b"a.txt", 0, 0x80000000, buf)
for fl in [0x2000, 0x4000, 0x6000, 0x8000]:
    r("newfstatat %#x" % fl, 262, -100, b"a.txt", buf, fl)
r("newfstatat fd '' empty badflag", 262, f, b"", buf, 0x1000 | 0x8000)
r("newfstatat fd NULL empty badflag", 262, f, None, buf, 0x1000 | 0x8000)
r("newfstatat fd NULL", 262, f, None, buf, 0)
r("newfstatat badptr badflag", 262, -100, bad, buf, 0x8000)
r("readlinkat file-fd ''", 267, f, b"", buf, 100)
r("readlinkat dir-fd ''", 267, d, b"", buf, 100)
r("readlinkat cwd ''", 267, -100, b"", buf, 100)
r("readlinkat link-fd ''", 267, l, b"", buf, 100)
r("readlinkat a.txt", 267, -100, b"a.txt", buf, 100)
r("readlinkat file-fd '' size 0", 267, f, b"", buf, 0)
PY
