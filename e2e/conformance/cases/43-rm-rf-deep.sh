# rm -rf of deep trees: many levels, and long names walked relative to the cwd
# (3.6 KiB of path: paths longer than PATH_MAX cannot commit yet, see the report)
top=$(pwd)
mkdir -p deep/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20
touch deep/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/leaf
find deep | wc -l
python3 -c '
import os
os.mkdir("long"); os.chdir("long")
for i in range(18):
    os.mkdir("d" * 200); os.chdir("d" * 200)
open("f", "w").write("bottom\n")
print(open("f").read(), end="")
try:
    os.getcwd()
except OSError as e:
    print("getcwd", e.strerror)'
find long -type d | wc -l
find long -name f | wc -c
rm -rf deep long
ls
mkdir -p wide/a wide/b && touch wide/a/1 wide/b/2 && chmod 000 wide/a
rm -rf wide && echo wide-gone
rm -rf dir1 empty userdir
ls -d dir1 2>&1
ls
