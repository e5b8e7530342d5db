# open(2) with access mode 3 (ioctl only) needs read and write permission;
# the file is unchanged afterwards
python3 -c 'import os; os.close(os.open("a.txt", 3)); print("opened")'
cat a.txt
python3 -c '
import os
try:
    os.open("dir-ro", 3)
except OSError as e:
    print("dir:", os.strerror(e.errno))
'
