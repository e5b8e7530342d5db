# set-group-ID: inherited from directories, stripped from files created by non-members,
# cleared by chmod of a non-member and by chown
mkdir sg && chgrp 1234 sg && chmod 2777 sg
as() { u=$1; shift; setpriv --reuid "$u" --regid "$u" --clear-groups "$@" 2>&1; }
as 1000 /usr/bin/python3 -c '
import os
fd = os.open("sg/f", os.O_CREAT | os.O_WRONLY, 0o2775); os.close(fd)
os.mkdir("sg/d", 0o755)
os.mkdir("sg/d/deeper", 0o700)
fd = os.open("sg/d/g", os.O_CREAT | os.O_WRONLY, 0o2771); os.close(fd)
os.chmod("sg/f", 0o2755)
for p in ["sg/f", "sg/d", "sg/d/deeper", "sg/d/g"]:
    st = os.stat(p); print(p, oct(st.st_mode & 0o7777), st.st_gid)'
setpriv --reuid 1000 --regid 1000 --groups 1234 /usr/bin/python3 -c '
import os
fd = os.open("sg/m", os.O_CREAT | os.O_WRONLY, 0o2775); os.close(fd)
st = os.stat("sg/m"); print("member", oct(st.st_mode & 0o7777), st.st_gid)'
chmod 6755 exec.sh && chown 1000 exec.sh && stat -c '%n %a %u' exec.sh
chmod 6755 a.txt && chown 0:0 a.txt && stat -c '%n %a' a.txt
chmod 2755 dir1 && chown 1000 dir1 && stat -c '%n %a' dir1
chmod 6744 b.txt && chown 1000 b.txt && stat -c '%n %a' b.txt
mkdir sg/rootd && stat -c '%n %a %g' sg/rootd
cp -p exec.sh sg/cp && stat -c '%n %a %g' sg/cp
mv a.txt sg/ && stat -c '%n %a %g' sg/a.txt
