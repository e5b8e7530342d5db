# renameat2 flags: NOREPLACE, EXCHANGE (file<->dir), WHITEOUT, invalid combinations
python3 - <<'PY'
import ctypes, os, errno
libc = ctypes.CDLL(None, use_errno=True)
NOREPLACE, EXCHANGE, WHITEOUT = 1, 2, 4
def r2(a, b, flags):
    r = libc.renameat2(-100, a.encode(), -100, b.encode(), flags)
    return "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]
print("noreplace existing", r2("a.txt", "b.txt", NOREPLACE))
print("noreplace new", r2("a.txt", "a-new", NOREPLACE))
print("noreplace dangling", r2("ro.txt", "dangling", NOREPLACE))
print("exchange file-dir", r2("b.txt", "dir1", EXCHANGE))
print(open("dir1").read(), end=""); print(sorted(os.listdir("b.txt")))
print("exchange back", r2("dir1", "b.txt", EXCHANGE))
print("exchange missing", r2("b.txt", "nope", EXCHANGE))
print("exchange both", r2("b.txt", "x", EXCHANGE | NOREPLACE))
print("exchange self", r2("b.txt", "b.txt", EXCHANGE))
print("exchange hardlinks", r2("a-new", "hard-a", EXCHANGE))
print("exchange dirs", r2("dir1", "empty", EXCHANGE))
print(sorted(os.listdir("empty")), sorted(os.listdir("dir1")))
print("exchange into own child", r2("empty", "empty/sub", EXCHANGE))
print("exchange symlink-file", r2("link-to-a", "exec.sh", EXCHANGE))
print(os.readlink("exec.sh"), os.path.islink("link-to-a"))
print("bad flags", r2("b.txt", "c", 8))
os.mkdir("w")
open("w/src", "w").write("src\n")
res = r2("w/src", "w/dst", WHITEOUT)
if res == "ok":
    st = os.lstat("w/src")
    print("whiteout: done", oct(st.st_mode >> 12), os.major(st.st_rdev), os.minor(st.st_rdev), open("w/dst").read(), end="")
    os.unlink("w/src")
else:
    print("whiteout: refused", sorted(os.listdir("w")))
    os.rename("w/src", "w/dst")
print(sorted(os.listdir("w")))
PY
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 -c '
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
r = libc.renameat2(-100, b"userdir/a", -100, b"userdir/b", 4)
print("unprivileged whiteout", errno.errorcode[ctypes.get_errno()] if r else "ok")'
cat b.txt
