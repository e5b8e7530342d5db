# times a rename leaves: a directory moved to another parent (its ".." rewritten), both objects
# of RENAME_EXCHANGE, a replaced file that keeps another name, a moved FIFO and symlink; the
# parents' times; statx and stat agree; later chmod and utime still move ctime
python3 - <<'PY'
import os, time, ctypes, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def exch(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
def t(p): st = os.lstat(p); return (st.st_mtime_ns, st.st_ctime_ns)
def diff(label, before, paths):
    print(label.ljust(22), " ".join("%s:%s%s" % (p, "M" if t(p)[0] != before[p][0] else "-", "C" if t(p)[1] != before[p][1] else "-") for p in paths))
def step(label, f, before_paths, after_paths=None):
    b = {p: t(p) for p in before_paths}; time.sleep(0.02); f()
    after_paths = after_paths or before_paths
    b2 = {a: b[p] for p, a in zip(before_paths, after_paths)}
    diff(label, b2, after_paths)
os.mkfifo("ff"); os.link("ro.txt", "ro-2")
step("dir to other parent", lambda: os.rename("dir1/sub", "empty/sub"), ["dir1/sub", "dir1", "empty"], ["empty/sub", "dir1", "empty"])
step("exchange", lambda: exch("a.txt", "dir1"), ["a.txt", "dir1", "."], ["dir1", "a.txt", "."])
step("replace, other name", lambda: os.rename("b.txt", "ro.txt"), ["ro-2", "b.txt"], ["ro-2", "ro.txt"])
step("fifo", lambda: os.rename("ff", "empty/ff"), ["ff"], ["empty/ff"])
step("symlink", lambda: os.rename("dangling", "empty/dl"), ["dangling"], ["empty/dl"])
step("host dir same parent", lambda: os.rename("dir-ro", "dir-ro2"), ["dir-ro", "dir-ro/e.txt"], ["dir-ro2", "dir-ro2/e.txt"])
step("chmod after rename", lambda: os.chmod("empty/sub", 0o700), ["empty/sub"])
step("utime after rename", lambda: os.utime("empty/dl", ns=(1, 2), follow_symlinks=False), ["empty/dl"])
out = subprocess.run(["stat", "-c", "%Z %z", "empty/sub", "empty/dl", "ro-2"], capture_output=True, text=True).stdout.split("\n")
print(all(str(os.lstat(p).st_ctime_ns // 10**9) == l.split()[0] for p, l in zip(["empty/sub", "empty/dl", "ro-2"], out)))
print(os.lstat("empty/dl").st_mtime_ns, os.lstat("empty/sub").st_nlink, os.lstat("dir1").st_nlink if os.path.isdir("dir1") else "file")
PY
