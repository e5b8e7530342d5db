# chmod symbolic and octal, of a directory, a FIFO and through a symlink; chown and chgrp, of a
# symlink itself (-h); a chown of a setuid file clears the bit
chmod u+x,g-r,o= a.txt && stat -c '%n %a' a.txt hard-a
chmod 0 b.txt && stat -c '%n %a' b.txt && cat b.txt
chmod 1777 empty && stat -c '%n %a' empty
chmod 600 fifo && stat -c '%n %a %F' fifo
chmod 640 link-to-a && stat -c '%n %a' a.txt
stat -c '%n %a' link-to-a
chown 1234:5678 dir1/c.txt && stat -c '%n %u %g' dir1/c.txt
chgrp 42 dir1 && stat -c '%n %u %g' dir1
chown -h 77:88 dangling && stat -c '%n %u %g %F' dangling
chown -R 1000:1000 dir1/sub && stat -c '%n %u %g' dir1/sub dir1/sub/d.txt
cp exec.sh suid && chmod 4755 suid && stat -c '%n %a' suid
chown 1000 suid && stat -c '%n %a %u' suid
chmod 2755 exec.sh && chgrp 100 exec.sh && stat -c '%n %a %g' exec.sh
