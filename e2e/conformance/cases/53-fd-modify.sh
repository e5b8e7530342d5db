# calls by descriptor that would modify a host original: fchmod, fchown,
# futimens, ftruncate, fallocate, fsetxattr, write through an O_RDWR fd, mmap
python3 - <<'PY'
import os, mmap
fd = os.open("b.txt", os.O_RDONLY)
os.fchmod(fd, 0o640)
print(oct(os.fstat(fd).st_mode & 0o777), oct(os.stat("b.txt").st_mode & 0o777))
os.fchown(fd, 1000, 1000)
print(os.fstat(fd).st_uid, os.stat("b.txt").st_uid)
os.utime(fd, (100, 200))
print(os.fstat(fd).st_mtime, os.stat("b.txt").st_mtime)
os.close(fd)
fd = os.open("a.txt", os.O_RDWR)
os.ftruncate(fd, 3)
print(os.fstat(fd).st_size, os.stat("hard-a").st_size, open("hard-a").read())
os.posix_fallocate(fd, 0, 10000)
print(os.stat("a.txt").st_size, os.stat("hard-a").st_size)
os.close(fd)
fd = os.open("ro.txt", os.O_RDONLY)
os.fchmod(fd, 0o644)
print(oct(os.stat("ro.txt").st_mode & 0o777))
os.close(fd)
with open("exec.sh", "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    m[0:2] = b"#!"
    m[-4:-1] = b"@@@"
    m.flush(); m.close()
print(open("exec.sh").read().splitlines()[-1])
with open("sp ace.txt", "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    print(m[:5]); m.close()
d = os.open("dir1", os.O_RDONLY | os.O_DIRECTORY)
os.fchmod(d, 0o750)
os.utime(d, (300, 400))
print(oct(os.stat("dir1").st_mode & 0o777), os.stat("dir1").st_mtime)
os.close(d)
fd = os.open("new", os.O_CREAT | os.O_RDWR, 0o600)
os.fchmod(fd, 0o604); os.ftruncate(fd, 5); os.utime(fd, (1, 2))
print(oct(os.stat("new").st_mode & 0o777), os.stat("new").st_size, os.stat("new").st_mtime)
os.setxattr(fd, "user.k", b"v")
print(os.getxattr("new", "user.k"))
os.close(fd)
PY
stat -c '%n %a %u %s' a.txt b.txt hard-a dir1 new ro.txt
stat -c '%n %Y' b.txt dir1 new ro.txt
