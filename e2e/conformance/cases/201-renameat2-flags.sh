# renameat2 RENAME_NOREPLACE and RENAME_EXCHANGE on files, dirs and symlinks, made and host ones
python3 - <<'PY'
import ctypes, os, errno
libc = ctypes.CDLL(None, use_errno=True)
AT = -100
def r2(a, b, flags, label):
    rc = libc.renameat2(AT, a.encode(), AT, b.encode(), flags)
    e = ctypes.get_errno() if rc else 0
    print(label, "ok" if rc == 0 else errno.errorcode[e])
NOREPLACE, EXCHANGE, WHITEOUT = 1, 2, 4
r2("a.txt", "b.txt", NOREPLACE, "noreplace-existing")
r2("a.txt", "new.txt", NOREPLACE, "noreplace-new")
r2("new.txt", "dangling", NOREPLACE, "noreplace-dangling-link")
r2("new.txt", "b.txt", EXCHANGE, "exchange-files")
r2("dir1", "empty", EXCHANGE, "exchange-dirs")
r2("empty", "link-to-a", EXCHANGE, "exchange-dir-link")
r2("b.txt", "nothere", EXCHANGE, "exchange-missing")
r2("b.txt", "b.txt", EXCHANGE, "exchange-self")
r2("b.txt", "b.txt", NOREPLACE, "noreplace-self")
r2("b.txt", "c.txt", NOREPLACE | EXCHANGE, "both-flags")
r2("dir1", "dir1/sub/x", NOREPLACE, "noreplace-into-self")
r2("link-to-a", "link-to-a/../dir1/sub", EXCHANGE, "exchange-with-descendant")
open("made", "w").write("made\n"); os.mkdir("madedir")
r2("made", "madedir", EXCHANGE, "exchange-made-file-dir")
r2("madedir", "hard-a", EXCHANGE, "exchange-dir-hardlink")
for n in sorted(os.listdir(".")):
    p = n
    kind = "l" if os.path.islink(p) else "d" if os.path.isdir(p) else "f"
    extra = os.readlink(p) if kind == "l" else sorted(os.listdir(p)) if kind == "d" else open(p).read() if kind == "f" and n != "fifo" and n != "big.bin" else ""
    print(n, kind, extra)
PY
