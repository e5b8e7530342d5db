# directory link counts while subdirectories are made, moved in and out, replaced, exchanged
stat -c '%n %h' . dir1 dir1/sub empty
mkdir dir1/n1 dir1/n2
stat -c '%n %h' dir1
mv dir1/sub empty/
stat -c '%n %h' dir1 empty
mv dir1/n1 empty/sub
stat -c '%n %h' dir1 empty empty/sub
rmdir dir1/n2
stat -c '%n %h' dir1
mv empty dir1/
stat -c '%n %h' . dir1 dir1/empty
python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir("x"); os.mkdir("x/y"); os.mkdir("x/y2")
r = libc.renameat2(-100, b"x", -100, b"dir1/empty/sub", 2)
print(r, os.stat("x").st_nlink, os.stat("dir1/empty/sub").st_nlink, os.stat("dir1/empty").st_nlink, os.stat(".").st_nlink)
r = libc.renameat2(-100, b"dir1", -100, b"a.txt", 2)
print(r, os.stat(".").st_nlink, os.stat("a.txt").st_nlink)'
ls -la --time-style=+ | awk '{print $1, $2, $NF}'
