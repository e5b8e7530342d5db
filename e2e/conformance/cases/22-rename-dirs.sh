# rename(2) of directories: over empty and non-empty dirs, files, into itself
python3 - <<'PY'
import os, errno
def tryit(label, f, *a):
    try:
        f(*a); print(label, "ok")
    except OSError as e:
        print(label, errno.errorcode[e.errno])
os.mkdir("d2"); os.mkdir("d2/x"); open("d2/x/f", "w").write("f\n")
tryit("dir-over-nonempty", os.rename, "d2", "dir1")
tryit("dir-over-file", os.rename, "d2", "a.txt")
tryit("file-over-dir", os.rename, "a.txt", "empty")
tryit("into-own-child", os.rename, "dir1", "dir1/sub/x")
tryit("into-itself", os.rename, "dir1", "dir1/x")
tryit("onto-itself", os.rename, "dir1", "dir1")
tryit("onto-itself-slash", os.rename, "dir1/", "dir1/")
tryit("dot", os.rename, "dir1/.", "zz")
tryit("dotdot", os.rename, "dir1/sub/..", "zz")
tryit("parent-onto-child", os.rename, "dir1/sub", "dir1")
tryit("child-onto-parent", os.rename, "dir1", "dir1/sub")
tryit("dir-over-empty", os.rename, "d2", "empty")
print(sorted(os.listdir("empty")), os.path.exists("d2"))
tryit("dir-over-empty-new", os.rename, "dir1/sub", "newdir")
print(sorted(os.listdir("dir1")), sorted(os.listdir("newdir")))
print(os.stat("dir1").st_nlink, os.stat("newdir").st_nlink, os.stat(".").st_nlink)
tryit("dir-trailing-slash", os.rename, "newdir/", "newdir2/")
tryit("ro-dir-child", os.rename, "dir-ro", "dir1/ro-moved")
print(sorted(os.listdir("dir1/ro-moved")))
os.mkdir("e1"); os.mkdir("e2")
tryit("empty-over-empty", os.rename, "e1", "e2")
print(os.path.exists("e1"), os.path.isdir("e2"))
PY
find . -path ./fifo -prune -o -type d -print | sort
cat empty/x/f newdir2/d.txt
