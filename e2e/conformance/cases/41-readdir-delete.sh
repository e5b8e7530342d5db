# readdir while deleting (and while creating): every entry seen exactly once
mkdir big
python3 -c '
import os
for i in range(300):
    open(f"big/e{i}", "w").close()'
python3 - <<'PY'
import os
seen = 0
for e in os.scandir("big"):
    os.unlink(e.path); seen += 1
print("deleted", seen, "left", os.listdir("big"))
names = []
with os.scandir("dir1") as it:
    for e in it:
        names.append(e.name)
        if e.is_file():
            os.unlink(e.path)
print(sorted(names), sorted(os.listdir("dir1")))
for i in range(50):
    open(f"big/n{i}", "w").close()
seen = set()
d = os.opendir if False else None
with os.scandir("big") as it:
    for e in it:
        seen.add(e.name)
        if len(seen) == 10:
            for j in range(5):
                open(f"big/late{j}", "w").close()
print(len([n for n in seen if n.startswith("n")]), len(os.listdir("big")))
PY
ls -a big | head -3
rm -r big
