# mmap MAP_SHARED of a host file and a made file: write through the map, msync, read it back
# through another descriptor and another name (a hard link)
python3 - <<'PY'
import mmap, os
for p, other in [("a.txt", "hard-a"), ("new.txt", "new-link")]:
    if p == "new.txt":
        open(p, "w").write("0123456789\n"); os.link(p, other)
    fd = os.open(p, os.O_RDWR)
    m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    m[0:3] = b"XYZ"
    m.flush()
    print(p, open(p, "rb").read(), open(other, "rb").read())
    m.close(); os.close(fd)
fd = os.open("big.bin", os.O_RDWR)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192)
m[4096:4100] = b"PAGE"
m.close(); os.close(fd)
with open("big.bin", "rb") as f:
    f.seek(4094); print(f.read(8), os.stat("big.bin").st_size)
PY
