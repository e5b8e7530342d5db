# copy-up keeps what the host object had: atime, owner, group, set-ID bits, xattrs, size of
# files only opened for writing; changes only what the call changes
echo more >> b.txt
stat -c '%n %a %u %g' b.txt
chmod 4711 exec.sh && stat -c '%n %Y %a' exec.sh
chown 1000:1234 ro.txt && stat -c '%n %Y %a %u %g' ro.txt
python3 -c '
import os
os.setxattr("dir1/c.txt", "user.k", b"v")
fd = os.open("dir1/c.txt", os.O_WRONLY | os.O_APPEND); os.write(fd, b"x\n"); os.close(fd)
print(os.getxattr("dir1/c.txt", "user.k"))
fd = os.open("user.txt", os.O_WRONLY); os.close(fd)
st = os.stat("user.txt"); print(st.st_size, st.st_uid, st.st_gid, st.st_mtime)
fd = os.open("sp ace.txt", os.O_RDWR); os.pwrite(fd, b"S", 0); os.close(fd)
st = os.stat("sp ace.txt"); print(st.st_size)'
cat 'sp ace.txt' dir1/c.txt
stat -c '%n %U %G %a %s' user.txt ro.txt
