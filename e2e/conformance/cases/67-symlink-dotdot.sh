# ".." after symlinks in every call: the kernel resolves ".." of the link target, not lexically
mkdir -p deep/x/y
echo deep-x > deep/x/file
ln -s deep/x/y yl
ln -s ../../dir1 deep/x/up
cat yl/../file
ls yl/..
mkdir yl/../made && ls deep/x
echo w > yl/../../w.txt && cat deep/w.txt
mv yl/../file yl/../file2 && ls deep/x
ln -s yl chain && cat chain/../file2
cat deep/x/up/c.txt
cat deep/x/up/../a.txt 2>&1
stat -c %F yl/.. chain/../.. deep/x/up/..
rm -r yl/../made && ls deep/x
readlink -f chain/../up/sub/..
python3 -c '
import os
print(os.path.realpath("chain/../up/sub/../c.txt").split("/")[-2:])
os.rename("deep/x", "deep/z")
print(os.path.exists("yl/.."), os.path.exists("chain"))
os.symlink("z", "deep/x")
print(sorted(os.listdir("yl/..")))'
