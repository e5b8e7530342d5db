# a directory's contents changed, then it is renamed over another one, then its old name reused
echo x >> dir1/c.txt
touch dir1/new-in-dir1
rm dir1/sub/d.txt
mkdir e2 && mv empty e2/ && mv dir1/sub empty
mv dir1 empty 2>&1 | sed 's/.*: //'
rmdir empty/sub 2>&1 || true
ls -a empty
mv -T dir1 empty 2>&1 | sed 's/.*: //'
ls -a empty dir1 2>&1
mkdir dir1 && echo again > dir1/c.txt
find . -path ./fifo -prune -o -print | sort
cat empty/dir1/c.txt dir1/c.txt
