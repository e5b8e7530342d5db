# fchmod/futimens through a read-only descriptor on a host file unlinked in the transaction:
# they succeed (fstat shows them), and nothing is committed for a file that has no name left
python3 -c '
import os
fd = os.open("dir1/c.txt", os.O_RDONLY)
os.unlink("dir1/c.txt")
os.fchmod(fd, 0o600)
os.utime(fd, (5, 6))
st = os.fstat(fd); print(st.st_nlink, oct(st.st_mode & 0o777), st.st_mtime)'
ls dir1
