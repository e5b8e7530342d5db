# trailing slashes: a final symlink is followed by lookups (stat, chmod) but not by
# calls that act on the name (rm, rmdir, mv, mkdir, mkfifo, ln), which fail as Linux does
ln -s dir1 ldir
rm ldir/ 2>&1; rmdir ldir/ 2>&1; mv ldir/ x 2>&1; ls -d ldir x 2>&1
rm a.txt/ 2>&1; rmdir a.txt/ 2>&1; mkdir a.txt/ 2>&1; mkdir dangling/ 2>&1; mkdir ldir/ 2>&1
mkfifo newf/ 2>&1; ln -s a.txt newl/ 2>&1; ln a.txt newh/ 2>&1; mv a.txt newm/ 2>&1
mkdir nd/ && ls -d nd; mv nd/ nd2/ && ls -d nd2; rmdir nd2/ && echo rmdir-slash-ok
stat -c %F ldir/ ldir; python3 -c 'import os; print(os.lstat("ldir/").st_mode >> 12, os.lstat("ldir").st_mode >> 12)'
chmod 700 ldir/ && stat -c %a dir1
ls
