# RENAME_EXCHANGE of a directory with a file across parents, and of two directories in
# different parents: link counts of the parents, '..' of the moved directories
python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def xchg(a, b):
    rc = libc.renameat2(-100, a.encode(), -100, b.encode(), 2)
    print("xchg", a, b, rc, ctypes.get_errno() if rc else 0)
def nl(*ps): print(" ".join("%s=%d" % (p, os.stat(p).st_nlink) for p in ps))
os.mkdir("p1"); os.mkdir("p1/d"); os.mkdir("p1/d/inner"); os.mkdir("p2"); open("p2/f", "w").write("file\n")
nl(".", "p1", "p2", "dir1", "empty")
xchg("p1/d", "p2/f")
nl("p1", "p2", "p2/f")
print(os.path.samestat(os.stat("p2/f/.."), os.stat("p2")), open("p1/d").read().strip())
xchg("dir1/sub", "empty")
nl(".", "dir1", "dir1/sub", "empty")
print(sorted(os.listdir("empty")), sorted(os.listdir("dir1/sub")), os.path.samestat(os.stat("empty/.."), os.stat(".")))
xchg("dir1", "a.txt")
nl(".", "a.txt")
print(sorted(os.listdir("a.txt")), open("dir1").read().strip())
xchg("p1", "userdir")
nl(".", "p1", "userdir")
os.rmdir("p1"); nl(".")
PY
