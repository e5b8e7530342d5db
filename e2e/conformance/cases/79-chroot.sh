# chroot inside the transaction: absolute paths, "..", absolute symlinks, /proc/self/root
mkdir -p jail/etc jail/sub && echo in-jail > jail/etc/f && ln -s /etc/f jail/abs && ln -s ../../../etc jail/sub/up
/usr/bin/python3 - <<'PY'
import os, errno
pid = os.fork()
if pid == 0:
    os.chroot("jail"); os.chdir("/")
    print(sorted(os.listdir("/")), sorted(os.listdir("/..")))
    print(open("/etc/f").read(), open("/abs").read(), open("sub/up/f").read(), end="")
    print(os.readlink("/proc/self/root") if False else os.getcwd())
    open("/made-in-jail", "w").write("m\n")
    os.mkdir("/../../newdir")
    os.symlink("/etc", "/etc-link")
    print(sorted(os.listdir("/etc-link/")), os.path.realpath("/etc-link/../sub/up"))
    try:
        open("/a.txt")
    except OSError as e:
        print("outside", errno.errorcode[e.errno])
    os.chdir("sub")
    os.chroot(".")
    print(os.getcwd(), sorted(os.listdir("/")))
    os._exit(0)
os.waitpid(pid, 0)
PY
find jail | sort
