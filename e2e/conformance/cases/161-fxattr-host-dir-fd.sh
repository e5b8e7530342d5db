# fgetxattr/flistxattr through a descriptor of a host directory see the attributes set on it
# (GNU tar --xattrs reads directories this way); through a file descriptor too; missing ones
# are ENODATA
python3 - <<'PY'
import os, errno
os.setxattr("dir1", "user.dir", b"d")
os.setxattr("a.txt", "user.file", b"f")
fd = os.open("dir1", os.O_RDONLY | os.O_DIRECTORY)
print(os.listxattr("dir1"), os.listxattr(fd), os.getxattr(fd, "user.dir"))
os.setxattr(fd, "user.more", b"m")
print(sorted(os.listxattr(fd)), os.getxattr("dir1", "user.more"))
os.removexattr("dir1", "user.dir")
print(os.listxattr(fd))
try:
    os.getxattr(fd, "user.dir")
except OSError as e:
    print(errno.errorcode[e.errno])
f = os.open("a.txt", os.O_RDONLY)
print(os.listxattr(f), os.getxattr(f, "user.file"))
PY
tar --xattrs -cf x.tar dir1 && mkdir tx && tar --xattrs -xf x.tar -C tx && rm x.tar
python3 -c 'import os; print(os.listxattr("tx/dir1"))'
