# zipfile and tarfile extraction: symlinks, hard links, modes, directories created implicitly,
# extraction over existing files, the 'data' filter refusing absolute/outside links
python3 - <<'PY'
import os, tarfile, zipfile, io, stat
with tarfile.open("t.tar", "w") as tf:
    def add(name, typ=tarfile.REGTYPE, data=b"", mode=0o644, link=""):
        ti = tarfile.TarInfo(name); ti.type = typ; ti.mode = mode; ti.mtime = 1000000000
        ti.size = len(data); ti.linkname = link
        tf.addfile(ti, io.BytesIO(data) if data else None)
    add("x/deep/f", data=b"deep\n", mode=0o600)
    add("x/exe", data=b"#!/bin/sh\n", mode=0o755)
    add("x/ln", tarfile.SYMTYPE, link="deep/f")
    add("x/hl", tarfile.LNKTYPE, link="x/exe")
    add("x/rodir", tarfile.DIRTYPE, mode=0o555)
    add("x/rodir/inside", data=b"in\n", mode=0o444)
    add("x/abs", tarfile.SYMTYPE, link="/etc/passwd")
# extraction filters (PEP 706) are in Python 3.12 and some 3.11 updates
trusted = {"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}
with tarfile.open("t.tar") as tf:
    tf.extractall("ex1", **trusted)
    if trusted:
        try:
            tf.extractall("ex2", filter="data")
        except tarfile.FilterError as e:
            print("data filter:", type(e).__name__)
for root, dirs, files in os.walk("ex1"):
    dirs.sort()
    for n in sorted(files + dirs):
        p = os.path.join(root, n); st = os.lstat(p)
        print(p, oct(st.st_mode), st.st_nlink, st.st_mtime if st.st_mtime < 1.5e9 else "new", os.readlink(p) if stat.S_ISLNK(st.st_mode) else "")
with tarfile.open("t.tar") as tf:
    tf.extractall("ex1", **trusted)
print(os.stat("ex1/x/exe").st_nlink, os.stat("ex1/x/exe").st_ino == os.stat("ex1/x/hl").st_ino)
with zipfile.ZipFile("z.zip", "w") as z:
    zi = zipfile.ZipInfo("zd/exe", (2001,1,1,0,0,0)); zi.external_attr = (0o100750) << 16
    z.writestr(zi, "run\n")
    zi = zipfile.ZipInfo("zd/sub/", (2001,1,1,0,0,0)); zi.external_attr = (0o40700 << 16) | 0x10
    z.writestr(zi, "")
    z.writestr(zipfile.ZipInfo("zd/sub/g", (2001,1,1,0,0,0)), "g\n")
with zipfile.ZipFile("z.zip") as z:
    z.extractall("zx"); z.extractall("zx")
    print(sorted(z.namelist()))
for p in ["zx/zd", "zx/zd/exe", "zx/zd/sub", "zx/zd/sub/g"]:
    print(p, os.path.isdir(p), os.path.getsize(p) if os.path.isfile(p) else "-")
os.unlink("t.tar"); os.unlink("z.zip")
PY
