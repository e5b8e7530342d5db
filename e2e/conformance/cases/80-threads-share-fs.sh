# threads share cwd and umask (CLONE_FS); a fork does not
/usr/bin/python3 - <<'PY'
import os, threading
def t1():
    os.chdir("dir1")
    os.umask(0o077)
th = threading.Thread(target=t1); th.start(); th.join()
print(os.getcwd().rsplit("/", 1)[1])
open("from-main", "w").close()
print(oct(os.stat("from-main").st_mode & 0o777), sorted(os.listdir(".")))
pid = os.fork()
if pid == 0:
    os.chdir("sub"); os.umask(0o022)
    open("child", "w").close()
    os._exit(0)
os.waitpid(pid, 0)
open("after-fork", "w").close()
print(oct(os.stat("after-fork").st_mode & 0o777), os.getcwd().rsplit("/", 1)[1])
print(oct(os.stat("sub/child").st_mode & 0o777))
def t2(res):
    res.append(open("c.txt").read())
    fd = os.open("sub", os.O_RDONLY)
    os.fchdir(fd); os.close(fd)
r = []
th = threading.Thread(target=t2, args=(r,)); th.start(); th.join()
print(r, os.listdir("."))
PY
find dir1 | sort
