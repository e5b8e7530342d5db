# ln -sf replacing files, symlinks and symlinks to directories
ln -sf b.txt link-to-a && readlink link-to-a
ln -sf dir1 a.txt && readlink a.txt && cat hard-a
ln -s dir1 ldir
ln -sf empty ldir; readlink ldir; ls dir1
ln -sfn empty ldir; readlink ldir
ln -sf ../a.txt dir1/ 2>&1; readlink dir1/a.txt
ln -sf /nonexistent/x dangling && readlink dangling
ln -sfT dir-ro dir1 2>&1
ln -sf exec.sh newlink && ./newlink arg
ln -f exec.sh hardnew && stat -c '%h' exec.sh
ln -f ro.txt hardnew && stat -c '%h' exec.sh ro.txt && cat hardnew
ls -l | awk '$1 ~ /^l/ {print $9, $10, $11}'
