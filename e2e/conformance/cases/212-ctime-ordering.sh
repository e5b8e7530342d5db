# ctime moves on chmod, chown, link, unlink of another link, rename, truncate, xattr and
# utimes, while mtime stays old; printed as comparisons, not times
python3 - <<'PY'
import os, time
def st(p): s = os.lstat(p); return s.st_mtime_ns, s.st_ctime_ns
old = 978307200 * 10**9
def show(label, p, before=None):
    m, c = st(p)
    print(label, "m-old" if m == old else "m-new", "c>m" if c > m else "c<=m", "" if before is None else ("c-moved" if c > before else "c-same"))
    return c
now = time.time_ns()
c = st("a.txt")[1]
os.chmod("a.txt", 0o640); c = show("chmod", "a.txt", c)
os.chown("b.txt", 0, 1000); show("chown", "b.txt")
c = st("dir1/c.txt")[1]
os.link("dir1/c.txt", "c-link"); c = show("link", "dir1/c.txt", c)
time.sleep(0.01)
os.unlink("c-link"); c = show("unlink-other", "dir1/c.txt", c)
time.sleep(0.01)
os.rename("dir1/c.txt", "dir1/c2.txt"); c = show("rename", "dir1/c2.txt", c)
c = st("ro.txt")[1]
os.truncate("ro.txt", 100); show("truncate-grow", "ro.txt", c)
os.setxattr("user.txt", "user.k", b"v"); show("setxattr", "user.txt")
os.utime("dir1/sub/d.txt", ns=(old, old)); show("utime-old", "dir1/sub/d.txt")
c = st("link-to-a")[1]; show("link-untouched", "link-to-a", c)
os.rename("dir1/sub", "subm"); show("rename-dir", "subm")
m, c = st("empty")
open("empty/f", "w").close()
m2, c2 = st("empty"); print("dir-entry", m2 > m, c2 > c, c2 == m2)
os.mkfifo("ff"); m, c = st("ff"); print("fifo", m == c)
c = st("exec.sh")[1]; time.sleep(0.01)
os.chown("exec.sh", -1, -1); c = show("chown-keep", "exec.sh", c)
time.sleep(0.01)
os.link("exec.sh", "exec2"); os.rename("b.txt", "exec2"); c = show("rename-over", "exec.sh", c)
c1, c2 = st("big.bin")[1], st("subm")[1]; time.sleep(0.01)
import ctypes; libc = ctypes.CDLL(None, use_errno=True)
print("xchg", libc.renameat2(-100, b"big.bin", -100, b"subm", 2))
show("xchg-file", "subm", c1); show("xchg-dir", "big.bin", c2)
open("made", "w").write("m"); c = st("made")[1]; time.sleep(0.01)
os.rename("made", "dir1/made"); c = show("rename-made", "dir1/made", c)
time.sleep(0.01)
with open("dir1/made", "a") as f: f.write("more")
m2, c2 = st("dir1/made"); print("write-after", c2 > c, c2 == m2)
s = os.stat("dir1/made", follow_symlinks=False)
import subprocess; print(subprocess.run(["stat", "-c", "%Z", "dir1/made"], capture_output=True, text=True).stdout.strip() == str(s.st_ctime_ns // 10**9))
PY
