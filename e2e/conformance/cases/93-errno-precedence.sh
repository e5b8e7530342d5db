# which error wins for an unprivileged user in a directory it cannot write: EEXIST, ENOENT,
# EACCES, ENOTDIR, EPERM, ENOTEMPTY in Linux's order
mkdir -p ro/sub && echo f > ro/file && chmod 555 ro
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 - <<'PY'
import os, errno
def t(label, f, *a, **kw):
    try:
        r = f(*a, **kw); print(label, "ok")
        if isinstance(r, int): os.close(r)
    except OSError as e:
        print(label, errno.errorcode[e.errno])
X = os.O_CREAT | os.O_EXCL | os.O_WRONLY
t("excl-existing", os.open, "ro/file", X)
t("excl-new", os.open, "ro/new", X)
t("creat-existing-rdonly", os.open, "ro/file", os.O_CREAT | os.O_RDONLY)
t("mkdir-existing", os.mkdir, "ro/sub")
t("mkdir-new", os.mkdir, "ro/x")
t("mkdir-existing-file", os.mkdir, "ro/file")
t("rmdir-missing", os.rmdir, "ro/missing")
t("rmdir-existing", os.rmdir, "ro/sub")
t("unlink-missing", os.unlink, "ro/missing")
t("unlink-file", os.unlink, "ro/file")
t("symlink-existing", os.symlink, "x", "ro/file")
t("symlink-new", os.symlink, "x", "ro/l")
t("link-existing", os.link, "a.txt", "ro/file")
t("rename-missing", os.rename, "ro/missing", "ro/y")
t("rename-into-ro", os.rename, "userdir", "ro/y")
t("mknod-existing", os.mkfifo, "ro/file")
t("through-file", os.open, "ro/file/x", os.O_RDONLY)
t("through-file-creat", os.open, "ro/file/x", X)
t("mkdir-through-missing", os.mkdir, "ro/missing/x")
t("chmod-notowner", os.chmod, "ro/file", 0o600)
t("chmod-missing", os.chmod, "ro/missing", 0o600)
t("rmdir-nonempty-ro", os.rmdir, "ro")
t("rmdir-dot", os.rmdir, "ro/sub/.")
PY
