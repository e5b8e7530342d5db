# flock(1) and fcntl locks through read-only descriptors on files the transaction has not
# changed (a hard-linked one, a read-only one locked by uid 1000): processes of the tree
# exclude each other as natively, a read lock through a read-only descriptor is one, a write
# lock through it fails, and the files keep their contents
flock -x a.txt sh -c 'flock -n a.txt true; echo "inner $?"; flock -n -s hard-a true; echo "inner-shared $?"'
flock -n a.txt true; echo "after $?"
flock -s dir1/c.txt sh -c 'flock -n -s dir1/c.txt true; echo "two-shared $?"; flock -n -x dir1/c.txt true; echo "shared-then-ex $?"'
setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'flock -x ro.txt sh -c "flock -n ro.txt true; echo \"uid-1000 \$?\""'
python3 - <<'PY'
import errno, fcntl, os
fd = os.open("dir1/sub/d.txt", os.O_RDONLY)
print(os.read(fd, 2))
fcntl.lockf(fd, fcntl.LOCK_SH)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError as e:
    print("write lock through a read-only descriptor:", errno.errorcode[e.errno])
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    fd2 = os.open("dir1/sub/d.txt", os.O_RDWR)
    try:
        fcntl.lockf(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB); print("child got the write lock")
    except OSError as e:
        print("child refused", e.errno in (errno.EAGAIN, errno.EACCES))
    fcntl.lockf(fd2, fcntl.LOCK_SH | fcntl.LOCK_NB); print("child got a read lock")
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(fd, 100))
PY
cat a.txt hard-a dir1/c.txt ro.txt dir1/sub/d.txt
