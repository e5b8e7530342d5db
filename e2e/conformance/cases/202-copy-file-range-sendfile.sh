# copy_file_range, sendfile and splice between host files and files made in the transaction,
# with offsets, then cp --reflink=auto of a changed file
python3 - <<'PY'
import os
src = os.open("big.bin", os.O_RDONLY)
dst = os.open("copy.bin", os.O_WRONLY | os.O_CREAT, 0o644)
n = os.copy_file_range(src, dst, 100000, 10)
print("cfr", n, os.lseek(src, 0, 1), os.lseek(dst, 0, 1))
n = os.copy_file_range(src, dst, 5, 3, 200)
print("cfr-off", n, os.lseek(src, 0, 1), os.lseek(dst, 0, 1))
os.close(dst)
a = os.open("a.txt", os.O_RDWR)
n = os.sendfile(a, src, 0, 9)
print("sendfile", n)
os.close(a)
r, w = os.pipe()
b = os.open("b.txt", os.O_RDONLY)
n = os.splice(b, w, 3)
out = os.open("spliced", os.O_WRONLY | os.O_CREAT, 0o600)
n2 = os.splice(r, out, n)
print("splice", n, n2)
os.close(out)
print(os.stat("copy.bin").st_size, open("copy.bin", "rb").read()[:12], open("a.txt","rb").read(), open("spliced").read())
PY
cp --reflink=auto a.txt a2.txt; cp --reflink=auto big.bin big2.bin
echo more >> big2.bin
cmp big.bin big2.bin; tail -c 9 big2.bin; cat a2.txt
