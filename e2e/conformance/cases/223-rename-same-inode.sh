# rename between two hard links of one file does nothing (both names stay), also after the
# file was changed, for made files and through RENAME_NOREPLACE/EXCHANGE; rename onto self
python3 - <<'PY'
import os, ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
os.rename("a.txt", "hard-a")
print(sorted(n for n in os.listdir(".") if "a" in n and n.endswith("a") or n == "a.txt"), os.stat("a.txt").st_nlink)
with open("a.txt", "a") as f: f.write("more\n")
os.rename("hard-a", "a.txt")
print(os.path.exists("hard-a"), os.stat("hard-a").st_nlink, open("hard-a").read())
open("m", "w").write("m"); os.link("m", "m2"); os.link("m", "dir1/m3")
os.rename("m", "dir1/m3")
print(sorted(os.listdir("dir1")), os.stat("m").st_nlink)
for fl in (1, 2):
    rc = libc.renameat2(-100, b"m", -100, b"m2", fl)
    print("flags", fl, rc, errno.errorcode.get(ctypes.get_errno()) if rc else "", os.path.exists("m"), os.path.exists("m2"))
os.rename("m2", "m2"); os.rename("dir1", "dir1"); os.rename("dir1/", "dir1")
print(os.stat("m").st_nlink, sorted(os.listdir(".")))
os.unlink("m"); print(os.stat("m2").st_nlink, os.stat("dir1/m3").st_nlink)
PY
