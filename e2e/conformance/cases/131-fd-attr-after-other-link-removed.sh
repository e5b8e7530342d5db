# futimens (touch) and fchmod on a file whose other hard link was removed in the transaction:
# they change the remaining name
rm a.txt
touch -d '2005-05-05 UTC' hard-a
python3 -c '
import os
fd = os.open("hard-a", os.O_RDONLY)
os.fchmod(fd, 0o600)'
stat -c '%n %h %a %Y' hard-a
