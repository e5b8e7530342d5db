# rename a host directory away, recreate its name, move entries back and forth
mv dir1 old
mkdir dir1
ls -a dir1
mv old/c.txt dir1/
echo new > old/c.txt
mv old/sub dir1/sub
ls dir1 old
cat dir1/c.txt old/c.txt dir1/sub/d.txt
mv dir1 old/dir1-inner
mv old dir1
find dir1 | sort
cat dir1/dir1-inner/sub/d.txt
stat -c '%n %h' dir1 dir1/dir1-inner dir1/dir1-inner/sub
