# special mode bits at creation: mkdir, mkfifo, mknod and open(O_CREAT) with 07777 under
# umask 0 and 022, as root and as another user in a setgid directory
python3 - <<'PY'
import os, stat
for um in (0, 0o022):
    os.umask(um)
    d = "u%o" % um
    os.mkdir(d, 0o7777)
    os.mkfifo(d + "/fifo", 0o7777)
    os.mknod(d + "/node", 0o7777 | stat.S_IFREG)
    os.close(os.open(d + "/file", os.O_CREAT | os.O_WRONLY, 0o7777))
    os.symlink("x", d + "/sl")
    os.mknod(d + "/chr", 0o7777 | stat.S_IFCHR, os.makedev(1, 3))
    for n in sorted(os.listdir(d)) + [""]:
        p = os.path.join(d, n) if n else d
        print(p, oct(os.lstat(p).st_mode))
os.umask(0o022)
os.mkdir("sg", 0o777); os.chown("sg", 0, 1000); os.chmod("sg", 0o2777)
PY
setpriv --reuid=2000 --regid=2000 --clear-groups sh -c 'umask 0; mkdir -m 7777 sg/d; : > sg/f; chmod 2777 sg/f; mkdir sg/d/e; stat -c "%n %a %g" sg/d sg/f sg/d/e'
chmod g+s a.txt; stat -c '%n %a' a.txt
