# a new file in a set-group-ID directory: a caller outside the group without CAP_FSETID loses
# set-group-ID only when the requested mode also has group execute (mode_strip_sgid), judged
# before the umask; a member, or root, keeps it; new directories inherit it
mkdir sg && chgrp 1234 sg && chmod 2777 sg
for who in "--reuid 1000 --regid 1000 --clear-groups" "--reuid 1000 --regid 1000 --groups 1234"; do
  setpriv $who /usr/bin/python3 - "$who" <<'PY'
import os, sys
tag = "member" if "1234" in sys.argv[1] else "other"
def show(name):
    st = os.lstat(name); print(tag, name, oct(st.st_mode & 0o7777), st.st_gid)
for umask, name, mode in [(0, "f1", 0o2764), (0, "f2", 0o2774), (0, "f3", 0o2744),
                          (0o010, "f4", 0o2774), (0o010, "f5", 0o2764), (0o022, "f6", 0o6775)]:
    os.umask(umask)
    p = "sg/%s-%s" % (tag, name)
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY, mode)); show(p)
os.umask(0)
os.mknod("sg/%s-fifo" % tag, 0o2674 | 0o010000); show("sg/%s-fifo" % tag)
os.mknod("sg/%s-fifo2" % tag, 0o2664 | 0o010000); show("sg/%s-fifo2" % tag)
os.mkdir("sg/%s-dir" % tag, 0o775); show("sg/%s-dir" % tag)
fd = os.open("sg", os.O_TMPFILE | os.O_WRONLY, 0o2770)
st = os.fstat(fd); print(tag, "tmpfile", oct(st.st_mode & 0o7777), st.st_gid)
fd = os.open("sg", os.O_TMPFILE | os.O_WRONLY, 0o2760)
st = os.fstat(fd); print(tag, "tmpfile2", oct(st.st_mode & 0o7777), st.st_gid)
PY
done
umask 0; /usr/bin/python3 -c 'import os; os.close(os.open("sg/root-f", os.O_CREAT | os.O_WRONLY, 0o2775))'
stat -c '%n %a %g' sg/root-f
