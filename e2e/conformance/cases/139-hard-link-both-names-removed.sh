# both names of a hard-linked file removed while it is held open: fchmod and futimens work on
# the descriptor, and nothing of them is committed
python3 -c '
import os
fd = os.open("hard-a", os.O_RDONLY)
os.unlink("hard-a"); os.unlink("a.txt")
os.fchmod(fd, 0o600)
os.utime(fd, (5, 6))
st = os.stat(fd); print(st.st_nlink, oct(st.st_mode & 0o777), st.st_mtime)'
ls
