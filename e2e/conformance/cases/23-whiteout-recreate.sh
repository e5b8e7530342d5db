# a removed directory recreated shows none of its old children; files and
# directories replace each other
rm -r dir1
mkdir dir1
ls -a dir1
test -e dir1/c.txt || echo no-old-child
test -e dir1/sub/d.txt || echo no-old-grandchild
touch dir1/fresh
ls -a dir1
stat -c '%h' dir1
rm a.txt
mkdir a.txt
echo inside > a.txt/f
ls a.txt
cat hard-a
rmdir empty
echo now-a-file > empty
cat empty
rm -r dir1
echo file > dir1
cat dir1
rm dir1
mkdir -p dir1/sub
ls -a dir1/sub
rm -rf dir-ro 2>&1
ls -d dir-ro 2>&1
find . -path ./fifo -prune -o -print | sort
