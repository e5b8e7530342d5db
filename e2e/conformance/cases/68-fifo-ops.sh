# FIFOs: rename, hard link, chmod, remove, replace by a file, O_NONBLOCK opens
mv fifo dir1/fifo2
stat -c '%n %F' dir1/fifo2
ln dir1/fifo2 f-hard && stat -c '%h' dir1/fifo2
chmod 600 f-hard && stat -c '%a' dir1/fifo2
touch -d '2003-03-03 UTC' dir1/fifo2 && stat -c '%Y' f-hard
rm f-hard
mkfifo nf && echo data > nf.txt && mv nf.txt nf && stat -c %F nf
mkfifo nf2 && rm nf2 && mkfifo nf2 && stat -c '%F %h' nf2
python3 -c '
import os, errno
try:
    os.open("nf2", os.O_WRONLY | os.O_NONBLOCK)
except OSError as e:
    print("nonblock write", errno.errorcode[e.errno])
r = os.open("nf2", os.O_RDONLY | os.O_NONBLOCK)
w = os.open("nf2", os.O_WRONLY | os.O_NONBLOCK)
os.write(w, b"x" * 100)
print(len(os.read(r, 1000)))
os.close(w); os.close(r)
r = os.open("dir1/fifo2", os.O_RDWR)
os.write(r, b"rdwr\n"); print(os.read(r, 10)); os.close(r)'
ls
