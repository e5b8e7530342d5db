# symlinks whose targets are ".", "..", "/", with trailing slashes, empty components, and self-reference
ln -s . dot; ln -s .. dotdot; ln -s dir1/ dslash; ln -s a.txt/ fslash; ln -s dir1//sub///d.txt dbl
ln -s dot/dot/dot/a.txt deepdot; ln -s dir1/sub/../../dir1 back
cat dot/a.txt dot/dot/b.txt deepdot dbl
ls dslash; cat dslash/c.txt
cat fslash 2>&1 | sed 's/.*: //'
[ "$(cd dotdot && pwd -P)" = "$(cd .. && pwd -P)" ] && echo dotdot-is-parent
ls back/sub; readlink -f back/sub/../c.txt | sed "s|$PWD|PWD|"
ln -s "" empty-target 2>&1 | sed 's/.*: //'
python3 -c '
import os, errno
try:
    os.symlink("", "et")
except OSError as e:
    print("empty symlink", errno.errorcode[e.errno])
os.symlink("x" * 4095, "longtarget")
print(len(os.readlink("longtarget")))
try:
    os.symlink("x" * 4096, "toolong")
except OSError as e:
    print("4096", errno.errorcode[e.errno])
for p in ["dot", "dotdot", "dslash", "fslash", "back", "deepdot"]:
    print(p, os.path.isdir(p), os.path.exists(p), os.path.realpath(p) == os.path.realpath(os.readlink(p)))
os.chdir("dot/dslash/sub")
print(os.getcwd().rsplit("/", 2)[1:], open("../../a.txt").read(), end="")'
mv dot dir1/ && ls dir1/dot/ | head -3
rm dslash/ 2>&1 | sed 's/.*: //'; rm dslash && ls dir1
mkdir -p back/newd && ls dir1
