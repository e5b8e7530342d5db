# credentials changed inside a process: setuid, seteuid, setgroups, setfsuid; access(2) uses real ids
/usr/bin/python3 - <<'PY'
import os, errno
def t(label, f, *a):
    try:
        r = f(*a); print(label, "ok" if r is None or isinstance(r, int) else r)
    except OSError as e:
        print(label, errno.errorcode[e.errno])
def wr(p):
    os.close(os.open(p, os.O_WRONLY | os.O_APPEND))
def rd(p):
    os.close(os.open(p, os.O_RDONLY))
pid = os.fork()
if pid == 0:
    os.setgroups([])
    os.setresgid(1000, 1000, 0)
    os.setresuid(0, 1000, 0)
    t("euid1000 read b.txt", rd, "b.txt")
    t("euid1000 write user.txt", wr, "user.txt")
    t("euid1000 access b.txt", lambda: print("   access", os.access("b.txt", os.R_OK)))
    t("euid1000 create in userdir", lambda: os.close(os.open("userdir/e", os.O_CREAT | os.O_WRONLY, 0o600)))
    t("euid1000 create in .", lambda: os.close(os.open("x", os.O_CREAT | os.O_WRONLY, 0o600)))
    os.seteuid(0)
    t("back to root", rd, "b.txt")
    os.setgroups([1234])
    os.setresuid(1001, 1001, 1001)
    t("1001 read b.txt", rd, "b.txt")
    t("1001 write userdir", lambda: os.close(os.open("userdir/f", os.O_CREAT | os.O_WRONLY, 0o600)))
    t("1001 setuid back", os.setuid, 0)
    os._exit(0)
os.waitpid(pid, 0)
os.chmod("dir1", 0o770); os.chown("dir1", 0, 1234)
pid = os.fork()
if pid == 0:
    os.setgroups([1234]); os.setgid(1000); os.setuid(1000)
    t("group member write", lambda: os.close(os.open("dir1/g", os.O_CREAT | os.O_WRONLY, 0o644)))
    print("   gid", os.stat("dir1/g").st_gid, "uid", os.stat("dir1/g").st_uid)
    os._exit(0)
os.waitpid(pid, 0)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    libc.setfsuid(1000); libc.setfsgid(1000)
    t("fsuid1000 read b.txt", rd, "b.txt")
    t("fsuid1000 create userdir", lambda: os.close(os.open("userdir/fs", os.O_CREAT | os.O_WRONLY, 0o600)))
    print("   owner", os.stat("userdir/fs").st_uid, os.stat("userdir/fs").st_gid)
    os._exit(0)
os.waitpid(pid, 0)
PY
ls -n userdir dir1 | awk 'NR>1 {print $1, $3, $4, $NF}'
