# os.scandir d_type and inode numbers agree with os.stat/lstat, across renames, hard links,
# symlinks, a fifo, and after replacing a file by rename
python3 - <<'PY'
import os
open("new", "w").close(); os.mkdir("nd"); os.symlink("new", "nl"); os.link("a.txt", "a2")
os.rename("dir1/c.txt", "c-moved"); os.rename("dir1/sub", "sub-moved")
os.replace("b.txt", "ro.txt")
bad = []
for d in [".", "sub-moved", "dir1"]:
    for e in os.scandir(d):
        st = os.lstat(e.path)
        if e.inode() != st.st_ino: bad.append(("ino", e.path))
        if e.is_dir(follow_symlinks=False) != os.path.isdir(e.path) and not e.is_symlink(): bad.append(("dir", e.path))
        if e.is_symlink() != os.path.islink(e.path): bad.append(("lnk", e.path))
        if e.is_file(follow_symlinks=False) != (os.path.isfile(e.path) and not os.path.islink(e.path)): bad.append(("file", e.path))
        if e.stat(follow_symlinks=False).st_ino != st.st_ino: bad.append(("sino", e.path))
print("mismatches", bad)
names = {e.name: e for e in os.scandir(".")}
print(names["a.txt"].inode() == names["a2"].inode() == names["hard-a"].inode())
print(names["fifo"].is_file(), names["fifo"].is_dir(), names["dangling"].is_symlink(), names["dangling"].is_file())
print(sorted(names))
print(os.stat(".").st_ino == os.stat("sub-moved/..").st_ino, os.stat("dir1").st_nlink, os.stat(".").st_nlink)
ino = os.stat("c-moved").st_ino; os.rename("c-moved", "dir1/c-back"); print(os.stat("dir1/c-back").st_ino == ino)
PY
