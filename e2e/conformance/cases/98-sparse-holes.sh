# holes: SEEK_DATA/SEEK_HOLE on new and changed files, fallocate punch/zero/collapse, du and %b
truncate -s 8M holes && printf 'mid' | dd of=holes bs=1 seek=4M conv=notrunc 2>/dev/null
python3 - <<'PY'
import os
fd = os.open("holes", os.O_RDONLY)
d = os.lseek(fd, 0, os.SEEK_DATA); h = os.lseek(fd, d, os.SEEK_HOLE)
print("data at", d // 4096 * 4096 <= 4 << 20, "hole after", h > d, os.fstat(fd).st_size)
try:
    os.lseek(fd, 5 << 20, os.SEEK_DATA)
except OSError as e:
    print("no data after 5M", e.errno == 6)
os.close(fd)
fd = os.open("big.bin", os.O_RDWR)
print("big data", os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_HOLE))
os.truncate(fd, 3 << 20)
print("big hole", os.lseek(fd, 0, os.SEEK_HOLE), os.lseek(fd, (1 << 20) + 10, os.SEEK_HOLE))
os.close(fd)
PY
du -k holes big.bin | awk '{print ($1 < 1200) ? "small" : "big", $2}'
fallocate -p -o 0 -l 512K big.bin && du -k big.bin | awk '{print ($1 < 600) ? "punched" : $1}'
fallocate -z -o 0 -l 4K a.txt; od -c a.txt | head -2; stat -c %s a.txt hard-a
fallocate -l 1M prealloc && stat -c '%s %b' prealloc
fallocate -c -o 0 -l 4096 prealloc 2>&1 && stat -c %s prealloc
cp holes holes-copy && [ "$(stat -c %b holes-copy)" -lt 100 ] && echo copy-sparse
cmp holes holes-copy && echo same
stat -c '%n %s' holes big.bin
