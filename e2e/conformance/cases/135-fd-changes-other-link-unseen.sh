# changes through a descriptor after its name was removed, the file's other name never looked
# up in the transaction: fchmod, futimens and a write through /proc/self/fd reach that name
python3 -c '
import os
fd = os.open("hard-a", os.O_RDONLY)
os.unlink("hard-a")
os.fchmod(fd, 0o600)
os.utime(fd, (5, 6))
w = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND); os.write(w, b"more\n")
st = os.stat(fd); print(st.st_nlink, oct(st.st_mode & 0o777))'
