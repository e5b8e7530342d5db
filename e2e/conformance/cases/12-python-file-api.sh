# python's os and shutil over the view: makedirs, replace, link, symlink, scandir, stat fields,
# copytree with symlinks, rmtree, walk order made deterministic
python3 - <<'PY'
import os, shutil, stat
os.makedirs("p/q/r", mode=0o750)
with open("p/q/r/f", "w") as f: f.write("data")
os.replace("p/q/r/f", "p/g")
os.link("p/g", "p/g2"); os.symlink("g", "p/gs")
st = os.stat("p/g")
print("g", st.st_size, st.st_nlink, oct(stat.S_IMODE(st.st_mode)), stat.S_ISREG(st.st_mode))
print("gs", os.readlink("p/gs"), os.path.islink("p/gs"), os.path.samefile("p/gs", "p/g2"))
shutil.copytree("p", "pcopy", symlinks=True)
shutil.copytree("dir1", "dcopy")
for root, dirs, files in os.walk("pcopy"):
    dirs.sort(); print(root, sorted(files))
shutil.rmtree("p/q")
print(sorted(os.listdir("p")))
shutil.move("dcopy", "dir1/moved")
print(sorted(os.listdir("dir1")))
os.rename("pcopy", "empty/p")
print(os.path.exists("pcopy"), sorted(os.listdir("empty/p")))
try: os.rmdir("dir1")
except OSError as e: print("rmdir dir1:", e.strerror)
try: os.mkdir("a.txt")
except OSError as e: print("mkdir a.txt:", e.strerror)
PY
