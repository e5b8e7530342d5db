# pathlib/glob after creating and removing files and directories, hidden files, recursive
# patterns, os.walk with followlinks over a symlink loop, and os.path.realpath of chains
python3 - <<'PY'
import os, glob, pathlib
p = pathlib.Path("g")
for d in ["a/b/c", "a/.hid", "x"]:
    (p / d).mkdir(parents=True)
for f in ["a/1.txt", "a/b/2.txt", "a/b/c/3.txt", "a/.hid/4.txt", ".5.txt", "x/6.log"]:
    (p / f).write_text(f)
print(sorted(str(q) for q in p.rglob("*.txt")))
print(sorted(glob.glob("g/**/*.txt", recursive=True)))
print(sorted(glob.glob("g/**/*.txt", recursive=True, include_hidden=True)) if "include_hidden" in glob.glob.__code__.co_varnames else "old")
(p / "a/b/2.txt").unlink(); (p / "a/b/c").rename(p / "x/c"); (p / "x/c/new.txt").write_text("n")
print(sorted(str(q) for q in p.rglob("*.txt")))
print(sorted(str(q) for q in p.glob("*/*")))
print(sorted(str(q.relative_to(p)) for q in p.rglob("*") if q.is_dir()))
os.symlink("..", "g/x/up"); os.symlink("../a", "g/x/toa")
seen = []
for root, dirs, files in os.walk("g", followlinks=True):
    dirs.sort(); seen.append(root)
    if len(seen) > 50: break
print(len(seen), sorted(seen)[:12])
os.symlink("g/x/toa", "chain1"); os.symlink("chain1", "chain2")
print(os.path.relpath(os.path.realpath("chain2")), os.path.relpath(os.path.realpath("g/x/up/x/up/a")))
print(os.path.relpath(os.path.realpath("chain2/../x")))
print(sorted(glob.glob("g/x/*")), glob.glob("g/nomatch*"), glob.glob("dangl*"), glob.glob("dangling/*"))
PY
