# names that are not UTF-8 (Latin-1 bytes, lone continuation bytes), in new and host directories
/usr/bin/python3 - <<'PY'
import os
names = [b"caf\xe9", b"\xff\xfe", b"a\x80b", b"\xc3", b"ok-\xe2\x82"]
for n in names:
    with open(n, "wb") as f:
        f.write(n + b"\n")
os.mkdir(b"dir-\xe9")
open(b"dir-\xe9/inner-\xff", "w").write("x\n")
os.rename(b"caf\xe9", b"dir1/moved-\xe9")
os.symlink(b"target-\xff", b"link-\xfe")
os.link(b"a.txt", b"hard-\xa0")
os.rename(b"dir1", b"dir1-\xb5")
print(sorted(os.listdir(b".")))
print(sorted(os.listdir(b"dir1-\xb5")), os.readlink(b"link-\xfe"))
PY
ls | od -c | head -3 >/dev/null
find . -path ./fifo -prune -o -print | LC_ALL=C sort | od -An -c | tr -s ' ' | head -40
