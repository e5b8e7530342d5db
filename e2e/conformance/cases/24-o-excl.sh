# O_CREAT|O_EXCL: the shell's noclobber and python os.open
set -C
echo x > a.txt 2>/dev/null || echo clobber-refused
echo y > newfile && cat newfile
echo z > newfile 2>/dev/null || echo second-refused
echo ok >> a.txt && tail -n1 a.txt
set +C
python3 - <<'PY'
import os, errno
def op(label, path, flags, mode=0o644):
    try:
        fd = os.open(path, flags, mode); os.close(fd); print(label, "ok")
    except OSError as e:
        print(label, errno.errorcode[e.errno])
X = os.O_CREAT | os.O_EXCL | os.O_WRONLY
op("existing", "b.txt", X)
op("dir", "dir1", X)
op("dangling-symlink", "dangling", X)
op("symlink", "link-to-a", X)
op("new", "excl-new", X, 0o600)
op("again", "excl-new", X)
op("trailing-slash", "excl-dir/", X)
op("in-missing", "nodir/f", X)
op("nofollow-creat-dangling", "dangling", os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW)
op("creat-through-dangling", "dangling", os.O_CREAT | os.O_WRONLY)
print(os.path.exists("nowhere"), oct(os.stat("excl-new").st_mode & 0o777))
op("excl-dir-ro", "dir-ro/x", X)
PY
ls
