# O_TRUNC is ignored for FIFOs: opening one O_RDONLY|O_TRUNC is no write and leaves its times
# (it still needs write permission, as Linux asks for it before may_open drops O_TRUNC)
chmod 444 fifo
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 -c '
import os, errno
try:
    os.close(os.open("fifo", os.O_RDONLY | os.O_TRUNC | os.O_NONBLOCK)); print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])'
python3 -c '
import os
os.close(os.open("fifo", os.O_RDONLY | os.O_TRUNC | os.O_NONBLOCK))
print(os.stat("fifo").st_mtime)'
