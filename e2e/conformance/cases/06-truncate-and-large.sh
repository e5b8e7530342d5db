# truncate to shrink and to extend (a hole reads as zeros), a copy of the large file, an
# in-place write in its middle, cmp and checksums of parts
truncate -s 2 a.txt && od -c hard-a | head -2
truncate -s 5000 grown && od -An -tx1 grown | sort -u | head -3
truncate -s +3 b.txt && stat -c '%n %s' b.txt
cp big.bin big-copy && cmp big.bin big-copy && echo same
printf 'MIDDLE' | dd of=big.bin bs=1 seek=524288 conv=notrunc 2>/dev/null
cmp big.bin big-copy | sed 's/^.*differ: //'
dd if=big.bin bs=1 skip=524285 count=12 2>/dev/null; echo
head -c 4096 big.bin | sha256sum | cut -c1-16
tail -c 4096 big.bin | sha256sum | cut -c1-16
truncate -s 0 big-copy && stat -c '%n %s' big-copy big.bin
python3 -c 'import os; os.truncate("dir1/c.txt", 4); print(open("dir1/c.txt").read())'
