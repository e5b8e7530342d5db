# two processes of the tree sharing a file made in the transaction: one appends while another
# truncates; both see the same size; an O_APPEND descriptor after truncation writes at the end
python3 - <<'PY'
import os
fd = os.open("shared.txt", os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b"0123456789")
pid = os.fork()
if pid == 0:
    fd2 = os.open("shared.txt", os.O_WRONLY | os.O_APPEND)
    os.ftruncate(fd2, 4)
    os.write(fd2, b"ab")
    os._exit(0)
os.waitpid(pid, 0)
print(os.fstat(fd).st_size, os.stat("shared.txt").st_size, os.lseek(fd, 0, 1))
os.write(fd, b"Z")
os.lseek(fd, 0, 0); print(os.read(fd, 100))
fd3 = os.open("a.txt", os.O_RDWR)
os.truncate("a.txt", 2)
print(os.fstat(fd3).st_size, os.read(fd3, 100))
os.truncate("a.txt", 5)
print(os.pread(fd3, 10, 0), os.stat("hard-a").st_size)
PY
