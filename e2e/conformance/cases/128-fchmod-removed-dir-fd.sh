# fchmod and futimens through a descriptor on a host directory removed in the transaction:
# they succeed and show through the descriptor; nothing of them is committed
python3 -c '
import os
d = os.open("empty", os.O_RDONLY)
os.rmdir("empty")
os.fchmod(d, 0o700)
os.utime(d, (5, 6))
st = os.stat(d)
print(oct(st.st_mode & 0o777), st.st_mtime)'
echo new > kept.txt
