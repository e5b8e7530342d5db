# open(2) flag corners: O_RDONLY|O_TRUNC truncates, O_CREAT|O_DIRECTORY, O_DIRECTORY on files and
# links, O_CREAT through dangling links into missing dirs, O_APPEND with pwrite, O_NOFOLLOW variants
ln -s dir1 ldir; ln -s missing/x dl; ln -s /nonexistent-dir-xyz/f dl2
python3 - <<'PY'
import os, errno
def op(label, path, flags, mode=0o644):
    try:
        fd = os.open(path, flags, mode)
        st = os.fstat(fd); os.close(fd)
        print(label, "ok", st.st_size)
    except OSError as e:
        print(label, errno.errorcode[e.errno])
op("rdonly-trunc", "b.txt", os.O_RDONLY | os.O_TRUNC)
op("directory-file", "a.txt", os.O_DIRECTORY | os.O_RDONLY)
op("directory-link-to-dir", "ldir", os.O_DIRECTORY | os.O_RDONLY)
op("nofollow-link", "link-to-a", os.O_NOFOLLOW | os.O_RDONLY)
op("nofollow-middle-link", "ldir/c.txt", os.O_NOFOLLOW | os.O_RDONLY)
op("creat-dangling-missing-dir", "dl", os.O_CREAT | os.O_WRONLY)
op("creat-dangling-abs", "dl2", os.O_CREAT | os.O_WRONLY)
op("wronly-dir", "dir1", os.O_WRONLY)
op("rdwr-dir", "dir1", os.O_RDWR)
op("creat-dir-slash", "newx/", os.O_CREAT | os.O_WRONLY)
op("creat-existing-dir-slash", "dir1/", os.O_CREAT | os.O_WRONLY)
op("file-dot", "a.txt/.", os.O_RDONLY)
op("file-slash", "a.txt/", os.O_RDONLY)
op("dir-dotdot", "dir1/sub/../..", os.O_RDONLY)
op("creat-excl-fifo", "fifo", os.O_CREAT | os.O_EXCL | os.O_RDONLY)
op("empty-path", "", os.O_RDONLY)
op("trunc-ro-file", "ro.txt", os.O_WRONLY | os.O_TRUNC)
fd = os.open("app", os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
os.write(fd, b"0123456789"); os.pwrite(fd, b"XX", 2); os.lseek(fd, 0, 0); os.write(fd, b"end")
os.close(fd)
print(open("app").read())
print(os.path.lexists("/tmp/nonexistent-dir-for-dl2"), sorted(os.listdir(".")))
PY
