# sparse files: truncate -s 1G, dd seek=, du stays small, cp --sparse
truncate -s 1G sparse
stat -c '%s' sparse
[ "$(du -k sparse | cut -f1)" -lt 64 ] && echo sparse-small
dd if=/dev/zero of=seek.bin bs=1 count=1 seek=100M 2>/dev/null
stat -c '%s' seek.bin
[ "$(du -k seek.bin | cut -f1)" -lt 64 ] && echo seek-small
printf 'tail' | dd of=seek.bin bs=1 seek=50M conv=notrunc 2>/dev/null
dd if=seek.bin bs=1 skip=50M count=4 2>/dev/null; echo
cp --sparse=always sparse sparse2 && [ "$(du -k sparse2 | cut -f1)" -lt 64 ] && echo copy-small
truncate -s 2M big.bin
[ "$(du -k big.bin | cut -f1)" -lt 1100 ] && echo extended-sparsely
stat -c '%s' big.bin
rm sparse sparse2
python3 -c '
import os
fd = os.open("holes", os.O_CREAT | os.O_RDWR, 0o644)
os.pwrite(fd, b"data", 1 << 24)
print(os.lseek(fd, 0, os.SEEK_DATA) >= 0, os.fstat(fd).st_size)
os.close(fd)'
