# sed -i on a symlink: replaces the link by a file, or with --follow-symlinks edits the target
sed -i 's/alpha/ALPHA/' link-to-a
stat -c '%F' link-to-a a.txt
cat link-to-a a.txt
ln -s b.txt lb
sed -i --follow-symlinks 's/bravo/BRAVO/' lb
stat -c '%F %a' lb b.txt
cat b.txt
ln -s dir1/c.txt lc
sed -i.bak -e 's/charlie/CHARLIE/' lc
ls lc* dir1
cat lc.bak lc dir1/c.txt
sed -i 's/x/y/' dangling 2>&1
sed -i 's/e/E/g' dir-ro/e.txt 2>&1 && cat dir-ro/e.txt
perl -pi -e 's/delta/DELTA/' dir1/sub/d.txt && cat dir1/sub/d.txt
ls
