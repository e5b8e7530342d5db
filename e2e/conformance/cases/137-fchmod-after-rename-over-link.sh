# a rename replaces one name of a hard-linked file held open; fchmod and futimens through the
# descriptor change the file at its other name, not the file renamed in
python3 -c '
import os
fd = os.open("hard-a", os.O_RDONLY)
os.rename("b.txt", "hard-a")
os.fchmod(fd, 0o611)
os.utime(fd, (7, 8))'
stat -c '%n %a' hard-a
