# dirfd-relative calls: open/stat/mkdir/rename/unlink/readlink/chmod with dir_fd, scandir(fd)
python3 - <<'PY'
import os, stat, errno
d = os.open("dir1", os.O_RDONLY | os.O_DIRECTORY)
print(sorted(e.name for e in os.scandir(d)))
print(os.stat("c.txt", dir_fd=d).st_size, os.stat("sub", dir_fd=d).st_nlink)
fd = os.open("new.txt", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=d); os.write(fd, b"rel\n"); os.close(fd)
os.mkdir("nd", dir_fd=d)
os.symlink("c.txt", "lk", dir_fd=d)
print(os.readlink("lk", dir_fd=d))
os.rename("new.txt", "nd/moved.txt", src_dir_fd=d, dst_dir_fd=d)
os.chmod("nd/moved.txt", 0o644, dir_fd=d)
print(oct(os.stat("nd/moved.txt", dir_fd=d).st_mode))
sub = os.open("sub", os.O_RDONLY | os.O_DIRECTORY, dir_fd=d)
os.rename("dir1", "dir1-renamed")
print(sorted(os.listdir(sub)), sorted(e.name for e in os.scandir(d)))
os.unlink("lk", dir_fd=d)
fd = os.open("d.txt", os.O_RDONLY, dir_fd=sub); print(os.read(fd, 100)); os.close(fd)
print(os.stat("..", dir_fd=sub).st_ino == os.stat("dir1-renamed").st_ino)
os.link("c.txt", "hl", src_dir_fd=d, dst_dir_fd=sub)
print(os.stat("hl", dir_fd=sub).st_nlink)
os.rmdir("nd", dir_fd=d) if False else None
try:
    os.rmdir("nd", dir_fd=d)
except OSError as e:
    print("rmdir nd", errno.errorcode[e.errno])
f = os.open("c.txt", os.O_RDONLY, dir_fd=d)
try:
    os.stat("x", dir_fd=f)
except OSError as e:
    print("file as dirfd", errno.errorcode[e.errno])
print(os.stat("", dir_fd=f, follow_symlinks=False).st_size if False else os.fstat(f).st_size)
os.close(f)
os.chdir(sub)
print(os.getcwd().rsplit("/", 2)[-2:], sorted(os.listdir(".")))
os.chdir(d)
os.rename("sub", "sub2")
os.fchdir(sub)
print(os.getcwd().rsplit("/", 2)[-2:])
os.close(sub); os.close(d)
PY
find . -path ./fifo -prune -o -newer a.txt -print | sort
