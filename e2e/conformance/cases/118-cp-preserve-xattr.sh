# cp -a / cp --preserve=all / tar --xattrs / rsync -X carry user extended attributes set in the
# transaction, on files and directories (tar: files only)
python3 -c '
import os
os.setxattr("a.txt", "user.origin", b"host-hardlinked")
os.setxattr("b.txt", "user.origin", b"host")
os.setxattr("dir1", "user.dir", b"d")
open("n", "w").write("n\n"); os.setxattr("n", "user.origin", b"new")'
cp -a a.txt b.txt n dir1 empty/
cp --preserve=xattr ro.txt r2 && setfattr -n user.x r2 2>/dev/null; true
tar --xattrs -cf x.tar a.txt && mkdir tx && tar --xattrs -xf x.tar -C tx && rm x.tar
command -v rsync >/dev/null && rsync -aX dir1/ rs/ || cp -a dir1 rs
python3 -c '
import os
for p in ["empty/a.txt", "empty/b.txt", "empty/n", "empty/dir1", "tx/a.txt", "rs", "hard-a"]:
    print(p, sorted((k, os.getxattr(p, k)) for k in os.listxattr(p)))'
