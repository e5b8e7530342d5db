# flock(1) and fcntl locks on files made and changed in the transaction: lock, write, read back;
# a second process of the tree sees the lock (conflicting non-blocking attempts fail)
printf 'new\n' > locked.txt
flock locked.txt sh -c 'echo held >> locked.txt; flock -n locked.txt true; echo "inner-fd-lock $?"'
exec 9>>a.txt
flock -x 9
echo appended >&9
flock -n -x a.txt true; echo "other-open-file-lock $?"
flock -u 9
flock -n -x a.txt true; echo "after-unlock $?"
exec 9>&-
cat locked.txt a.txt
python3 - <<'PY'
import fcntl, os, struct
fd = os.open("dir1/c.txt", os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX, 4, 0)
os.write(fd, b"CHAR")
pid = os.fork()
if pid == 0:
    fd2 = os.open("dir1/c.txt", os.O_RDWR)
    try:
        fcntl.lockf(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB, 4, 0); print("child got lock")
    except OSError as e:
        print("child blocked", e.errno == 11 or e.errno == 13)
    try:
        fcntl.lockf(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB, 4, 4); print("child got other range")
    except OSError as e:
        print("child blocked other range")
    os._exit(0)
os.waitpid(pid, 0)
# F_GETLK from this process reports no conflict with its own lock
print(open("dir1/c.txt").read())
PY
