# open(O_CREAT|O_DIRECTORY) is EINVAL before any lookup and creates nothing (Linux >= 6.4);
# O_TMPFILE needs O_DIRECTORY and write access (EINVAL); O_DIRECTORY|O_NOFOLLOW on a symlink is
# ENOTDIR, before ELOOP
ln -s dir1 ldir
ln -s a.txt lfile
/usr/bin/python3 - <<'PY'
import os, errno
T = os.O_TMPFILE & ~os.O_DIRECTORY
for p, fl in [("newfile", os.O_CREAT | os.O_DIRECTORY | os.O_RDONLY),
              ("newfile", os.O_CREAT | os.O_EXCL | os.O_DIRECTORY | os.O_WRONLY),
              ("a.txt", os.O_CREAT | os.O_DIRECTORY | os.O_RDONLY),
              ("dir1", os.O_CREAT | os.O_DIRECTORY | os.O_RDONLY),
              ("missing/x", os.O_CREAT | os.O_DIRECTORY | os.O_RDONLY),
              ("dir1", os.O_TMPFILE | os.O_CREAT | os.O_WRONLY),
              ("dir1", T | os.O_WRONLY),
              ("missing", os.O_TMPFILE | os.O_RDONLY),
              ("dir1", os.O_TMPFILE | os.O_RDONLY),
              ("ldir", os.O_DIRECTORY | os.O_NOFOLLOW | os.O_RDONLY),
              ("lfile", os.O_DIRECTORY | os.O_NOFOLLOW | os.O_RDONLY),
              ("ldir", os.O_NOFOLLOW | os.O_RDONLY),
              ("ldir", os.O_DIRECTORY | os.O_NOFOLLOW | os.O_PATH),
              ("ldir", os.O_NOFOLLOW | os.O_PATH),
              ("ldir", os.O_CREAT | os.O_NOFOLLOW | os.O_WRONLY),
              ("ldir", os.O_DIRECTORY | os.O_RDONLY)]:
    try:
        os.close(os.open(p, fl, 0o644)); print(p, hex(fl), "ok")
    except OSError as e:
        print(p, hex(fl), errno.errorcode[e.errno])
print(os.path.exists("newfile"), os.listdir("dir1"))
PY
