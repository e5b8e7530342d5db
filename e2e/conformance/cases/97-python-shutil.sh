# python shutil and pathlib: copytree (dirs_exist_ok, symlinks), rmtree (fd-based), move across
# directories, copy2, make_archive/unpack_archive, glob/rglob, os.walk and os.fwalk
python3 - <<'PY'
import os, shutil, pathlib
shutil.copytree("dir1", "ct", symlinks=True)
shutil.copytree(".", "ct2", symlinks=True, ignore=shutil.ignore_patterns("fifo", "ct*"))
shutil.copytree("dir1", "ct", dirs_exist_ok=True)
shutil.copy2("exec.sh", "ct/exec-copy")
print(oct(os.stat("ct/exec-copy").st_mode), os.stat("ct/exec-copy").st_mtime)
shutil.move("ct/sub", "dir1/sub-moved")
shutil.move("ct", "empty")
shutil.rmtree("ct2/dir1")
print(shutil.rmtree.avoids_symlink_attacks)
arc = shutil.make_archive("arch", "gztar", root_dir="dir1")
shutil.unpack_archive(arc, "unpacked"); os.unlink(arc)
print(sorted(str(p) for p in pathlib.Path(".").rglob("*.txt") if "ct2" not in str(p)))
for root, dirs, files in os.walk("empty"):
    dirs.sort()
    print(root, sorted(files))
for root, dirs, files, rootfd in os.fwalk("unpacked"):
    dirs.sort()
    print(root, sorted(files), os.stat(".", dir_fd=rootfd).st_nlink)
shutil.rmtree("unpacked")
p = pathlib.Path("pl/a/b"); p.mkdir(parents=True)
(p / "f.txt").write_text("pathlib\n")
(p / "f.txt").rename(p.parent / "g.txt")
(p.parent / "g.txt").replace("dir1/c.txt")
pathlib.Path("pl/link").symlink_to("a")
print(pathlib.Path("pl/link/b").is_dir(), pathlib.Path("pl/link").resolve().name)
print(shutil.disk_usage(".").total > 0, shutil.which("exec.sh", path=".") )
PY
cat dir1/c.txt
find empty ct2 -printf '%p %y %m\n' | sort
