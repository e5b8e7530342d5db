# chmod -R, symbolic modes, X, symlinks not followed
chmod -R go-rwx dir1
find dir1 -printf '%p %m\n' | sort
chmod -R u=rwX,g=rX,o= dir1 exec.sh
find dir1 exec.sh -printf '%p %m\n' | sort
ln -s ../a.txt dir1/lnk
chmod -R 700 dir1
stat -c '%n %a' a.txt dir1/lnk dir1/c.txt
chmod -R a+w . 2>&1 | head -2
find . -path ./fifo -prune -o -printf '%p %m\n' | sort
chmod 000 dir1 && ls dir1 2>&1; chmod 755 dir1
chmod -R 0 dir-ro/../dir-ro && stat -c '%a' dir-ro dir-ro/e.txt
chmod u+s,g+s exec.sh && stat -c '%a' exec.sh
chmod -R 1777 empty && stat -c '%A' empty
