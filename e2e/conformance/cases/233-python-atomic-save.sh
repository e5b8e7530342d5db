# the atomic-save pattern: NamedTemporaryFile in the same dir + fsync + os.replace; mode
# preserved by copymode; replace over a symlink replaces the link; replace a dir fails
python3 - <<'PY'
import os, tempfile, shutil, stat
def save(path, data):
    d = os.path.dirname(path) or "."
    with tempfile.NamedTemporaryFile("w", dir=d, delete=False, prefix=".tmp-") as f:
        f.write(data); f.flush(); os.fsync(f.fileno()); tmp = f.name
    if os.path.exists(path):
        shutil.copymode(path, tmp)
    os.replace(tmp, path)
save("a.txt", "new alpha\n")
save("exec.sh", "#!/bin/sh\necho replaced\n")
save("dir1/new.txt", "fresh\n")
print(open("a.txt").read(), open("hard-a").read(), end="")
print(oct(os.stat("exec.sh").st_mode & 0o7777), oct(os.stat("dir1/new.txt").st_mode & 0o7777))
print(os.stat("a.txt").st_nlink, os.stat("hard-a").st_nlink)
t = tempfile.NamedTemporaryFile("w", dir=".", delete=False); t.write("x"); t.close()
os.replace(t.name, "link-to-a")
print(os.path.islink("link-to-a"), open("link-to-a").read())
t = tempfile.NamedTemporaryFile("w", dir=".", delete=False); t.close()
try: os.replace(t.name, "dir1")
except OSError as e: print("replace dir:", e.strerror)
try: os.replace("dir1", t.name)
except OSError as e: print("replace dir over file:", e.strerror)
os.unlink(t.name)
with tempfile.NamedTemporaryFile(dir="empty") as f:
    f.write(b"gone"); f.flush()
    print(len(os.listdir("empty")))
print(len(os.listdir("empty")))
with tempfile.TemporaryDirectory(dir=".") as td:
    os.makedirs(os.path.join(td, "a/b/c")); open(os.path.join(td, "a/b/c/f"), "w").close()
    os.chmod(os.path.join(td, "a/b"), 0o500)
print(sorted(x for x in os.listdir(".") if x.startswith("tmp")))
print(sorted(x for x in os.listdir(".") if x.startswith(".tmp")))
PY
