# RENAME_EXCHANGE of host directories and files, then changes in both, then exchange back part
python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def x(a, b):
    r = libc.renameat2(-100, a.encode(), -100, b.encode(), 2)
    print("exchange", a, b, "ok" if r == 0 else os.strerror(ctypes.get_errno()))
x("dir1", "userdir")
open("dir1/in-userdir", "w").write("u\n")
open("userdir/c.txt", "a").write("appended\n")
x("dir1/sub", "empty")
os.mkdir("empty/d-in-sub")
x("a.txt", "b.txt")
open("a.txt", "a").write("more\n")
x("hard-a", "dir-ro/e.txt")
x("dir1", "userdir/sub")
print(sorted(os.listdir("dir1")), sorted(os.listdir("userdir")), sorted(os.listdir("userdir/sub")))
PY
find . -path ./fifo -prune -o -print | sort
cat a.txt b.txt hard-a dir-ro/e.txt userdir/c.txt
stat -c '%n %u %a %h' dir1 userdir userdir/sub a.txt b.txt
