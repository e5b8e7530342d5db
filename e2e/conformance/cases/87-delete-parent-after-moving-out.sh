# move entries out of a host directory, then remove it, then recreate it with other entries
mv dir1/sub subx
mv dir1/c.txt .
rmdir dir1
mkdir -p dir1/sub
mv c.txt dir1/sub/
mv subx/d.txt dir1/
rmdir subx
find dir1 | sort
cat dir1/sub/c.txt dir1/d.txt
rm -r dir-ro && mkdir dir-ro && stat -c '%a' dir-ro
mv userdir ud && mkdir userdir && mv ud userdir/ && stat -c '%u %g' userdir userdir/ud
