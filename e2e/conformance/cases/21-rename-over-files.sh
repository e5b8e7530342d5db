# rename(2) over existing files, onto itself and onto another name of the same file
python3 - <<'PY'
import os, errno
def tryit(label, f, *a):
    try:
        f(*a); print(label, "ok")
    except OSError as e:
        print(label, errno.errorcode[e.errno])
tryit("self", os.rename, "a.txt", "a.txt")
tryit("same-inode", os.rename, "a.txt", "hard-a")
print(os.path.exists("a.txt"), os.path.exists("hard-a"), os.stat("a.txt").st_nlink)
tryit("over-file", os.rename, "b.txt", "ro.txt")
print(open("ro.txt").read(), oct(os.stat("ro.txt").st_mode))
tryit("over-symlink", os.rename, "exec.sh", "link-to-a")
print(os.path.islink("link-to-a"), open("link-to-a").read().split()[0])
tryit("symlink-over-file", os.rename, "dangling", "sp ace.txt")
print(os.readlink("sp ace.txt"))
tryit("missing", os.rename, "nope", "x")
tryit("into-missing-dir", os.rename, "a.txt", "nodir/x")
tryit("trailing-slash-file", os.rename, "a.txt", "x/")
tryit("file-onto-dot", os.rename, "a.txt", "dir1/.")
PY
echo one > n1; echo two > n2
mv n1 n2; cat n2; ls n1 2>&1
mv hard-a a.txt 2>&1; ls a.txt hard-a
stat -c '%n %h' a.txt
ls
