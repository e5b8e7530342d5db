# permission checks for unprivileged processes: sticky dirs, setgid dirs,
# chown, access(2) with real versus effective ids
PY=/usr/bin/python3
as() { u=$1; shift; setpriv --reuid "$u" --regid "$u" --clear-groups "$@" 2>&1; }
mkdir stick && chmod 1777 stick
as 1000 sh -c 'echo u1000 > stick/by1000; mkdir stick/d1000'
echo root > stick/byroot
as 1001 sh -c 'rm -f stick/by1000' 
as 1001 sh -c 'rmdir stick/d1000'
as 1001 sh -c 'mv stick/by1000 stick/stolen'
as 1001 sh -c 'echo append >> stick/by1000'
as 1000 sh -c 'rm -f stick/byroot'
as 1000 sh -c 'mv stick/by1000 stick/mine && rm stick/mine && rmdir stick/d1000 && echo owner-may'
ls stick
mkdir sg && chgrp 1234 sg && chmod 2775 sg
mkdir sg/sub && touch sg/f
stat -c '%n %a %g' sg/sub sg/f
as 1000 sh -c 'touch sg/x' 
chmod 2777 sg
as 1000 sh -c 'touch sg/x && mkdir sg/y && chmod 2755 sg/x' 
stat -c '%n %a %u %g' sg/x sg/y
as 1000 chown 0 user.txt
as 1000 chgrp 0 user.txt
as 1000 chown 1000:1000 user.txt && echo chown-to-self-ok
as 1000 chmod 4755 user.txt && stat -c '%a' user.txt
as 1000 sh -c 'echo x >> user.txt'; stat -c '%a' user.txt
as 1000 chmod 600 a.txt
as 1000 sh -c 'cat b.txt; cat dir-ro/e.txt; ls userdir; echo > userdir/w && echo wrote-userdir'
chmod 700 userdir; chown 0 userdir
as 1000 sh -c 'ls userdir; cat userdir/w'
setpriv --ruid 1000 $PY -c '
import os
print("real", os.access("b.txt", os.R_OK), os.access("a.txt", os.W_OK), os.access("exec.sh", os.X_OK))
print("effective", os.access("b.txt", os.R_OK, effective_ids=True), os.access("ro.txt", os.W_OK, effective_ids=True))
print(os.getuid(), os.geteuid())'
as 1000 $PY -c '
import os
print(os.access("b.txt", os.R_OK), os.access("ro.txt", os.W_OK), os.access("user.txt", os.W_OK), os.access("dir-ro", os.W_OK))'
as 1000 test -w ro.txt || echo test-w-refused
test -w ro.txt && echo root-may-write
test -x ro.txt || echo root-no-x
