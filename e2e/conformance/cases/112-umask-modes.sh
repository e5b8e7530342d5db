# umask applied to every creating call: O_TMPFILE, mkfifo, mknod, mkdir with the sticky bit,
# symlinks (always 777), cp, install; setgid directories
python3 - <<'PY'
import os, stat
os.umask(0o027)
fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o777)
print("tmpfile", oct(os.fstat(fd).st_mode & 0o7777))
os.close(fd); open("tmp-linked", "w").close(); os.chmod("tmp-linked", 0o750)
os.mkfifo("ff", 0o666)
os.mknod("nod", stat.S_IFREG | 0o4777)
os.mkdir("dsticky", 0o1777)
os.mkdir("dsgid", 0o777)
os.mkdir("dall", 0o1777)
os.symlink("a.txt", "sl")
fd = os.open("suid-new", os.O_CREAT | os.O_WRONLY, 0o6777); os.close(fd)
for p in ["tmp-linked", "ff", "nod", "dsticky", "dsgid", "dall", "suid-new"]:
    print(p, oct(os.stat(p).st_mode & 0o7777))
print("sl", oct(os.lstat("sl").st_mode & 0o7777))
os.umask(0)
os.mkdir("d0", 0o777); print("d0", oct(os.stat("d0").st_mode & 0o7777))
os.umask(0o777)
os.mkdir("d777", 0o777); print("d777", oct(os.stat("d777").st_mode & 0o7777))
fd = os.open("f777", os.O_CREAT | os.O_RDWR, 0o777); os.write(fd, b"still writable"); os.close(fd)
print("f777", oct(os.stat("f777").st_mode & 0o7777), os.stat("f777").st_size)
PY
umask 077; cp a.txt cp-umask; install -d inst-d; mkdir -p p1/p2
stat -c '%n %a' cp-umask inst-d p1 p1/p2
