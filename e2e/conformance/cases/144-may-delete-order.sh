# rmdir, unlink and rename check the directory's permission, then the sticky bit, then the
# victim's type (may_delete): in a directory the caller cannot write EACCES wins over
# ENOTDIR/EISDIR; in a sticky one EPERM does; a trailing slash on unlink answers first
mkdir -p ro/sub ok/sub st/sub && echo f > ro/file && echo f > ok/file && echo f > st/file
chmod 555 ro && chmod 777 ok && chmod 1777 st
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 - <<'PY'
import os, errno
def t(label, f, *a):
    try:
        f(*a); print(label, "ok")
    except OSError as e:
        print(label, errno.errorcode[e.errno])
for d in ("ro", "ok", "st"):
    t(d + " rmdir-file", os.rmdir, d + "/file")
    t(d + " rmdir-file/", os.rmdir, d + "/file/")
    t(d + " unlink-dir", os.unlink, d + "/sub")
    t(d + " unlink-dir/", os.unlink, d + "/sub/")
    t(d + " unlink-file/", os.unlink, d + "/file/")
    t(d + " rename-file-over-dir", os.rename, d + "/file", d + "/sub")
    t(d + " rename-dir-over-file", os.rename, d + "/sub", d + "/file")
    t(d + " rename-file-over-file/", os.rename, d + "/file", d + "/file2/")
    t(d + " rename-dir-into-itself", os.rename, d + "/sub", d + "/sub/x")
    t(d + " rename-to-self", os.rename, d + "/file", d + "/file")
t("mkdir-in-ro", os.mkdir, "ro/new")
PY
ls ro ok st
