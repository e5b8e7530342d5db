# /proc/self/fd and /proc/self/cwd links while their objects move: a renamed file, an unlinked
# file (" (deleted)"), a renamed then removed directory, a file replaced by rename, a
# descriptor reopened through /proc/self/fd after the rename, dir nlink after moves
python3 - <<'PY'
import os
top = os.getcwd()
def rl(fd): return os.readlink("/proc/self/fd/%d" % fd).replace(top, "T")
f = os.open("a.txt", os.O_RDONLY); w = os.open("dir1/c.txt", os.O_RDWR)
os.makedirs("m/n"); d = os.open("m/n", os.O_RDONLY)
print(rl(f), rl(w), rl(d))
os.rename("a.txt", "dir1/a-moved"); os.rename("dir1", "dir1-r"); os.rename("m/n", "n2")
print(rl(f), rl(w), rl(d))
os.unlink("dir1-r/a-moved"); print(rl(f))
os.write(w, b"X"); os.rename("b.txt", "dir1-r/c.txt"); print(rl(w))
r = os.open("/proc/self/fd/%d" % w, os.O_RDONLY); print(os.read(r, 20)); os.close(r)
os.chdir("n2"); print(os.readlink("/proc/self/cwd").replace(top, "T"), os.getcwd().replace(top, "T"))
os.rename("../n2", "../n3"); print(os.readlink("/proc/self/cwd").replace(top, "T"))
os.rmdir("../n3"); print(os.readlink("/proc/self/cwd").replace(top, "T"), rl(d))
os.chdir(top)
print([os.stat(p).st_nlink for p in [".", "m", "dir1-r", "dir1-r/sub"]])
os.rename("dir1-r/sub", "m/sub"); os.mkdir("m/sub/deeper")
print([os.stat(p).st_nlink for p in [".", "m", "dir1-r", "m/sub"]])
print(os.path.exists("/proc/self/fd/%d" % f), os.stat("/proc/self/fd/%d" % f).st_nlink)
print(open("/proc/self/fd/%d" % f).read(), end="")
PY
