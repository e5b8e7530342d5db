# a host directory emptied by the transaction can be removed, renamed over and replaced
rm dir1/c.txt
rm -r dir1/sub
ls -a dir1
rmdir dir1 && echo rmdir-ok
ls -d dir1 2>&1
rm dir-ro/e.txt 2>&1
mkdir m && echo m > m/f
rm -r userdir/. 2>&1
rm userdir/* 2>/dev/null; rmdir userdir && echo userdir-gone
mv m empty && cat empty/m/f
