# hundreds of files: create 500, rename half, delete a third, list
mkdir many
i=1
while [ $i -le 500 ]; do : > many/f$i; i=$((i+1)); done
ls many | wc -l
i=1
while [ $i -le 250 ]; do mv many/f$i many/r$i; i=$((i+1)); done
i=1
while [ $i -le 500 ]; do [ $((i % 3)) -eq 0 ] && rm -f many/f$i many/r$i; i=$((i+1)); done
ls many | wc -l
ls many | grep -c '^r'
ls many | sort | head -5
ls -f many | wc -l
python3 - <<'PY'
import os
os.makedirs("many2")
for i in range(600):
    with open(f"many2/p{i:04d}", "w") as f:
        f.write(str(i))
for i in range(0, 600, 2):
    os.rename(f"many2/p{i:04d}", f"many/q{i:04d}")
for i in range(1, 600, 6):
    os.unlink(f"many2/p{i:04d}")
print(len(os.listdir("many")), len(os.listdir("many2")), len(list(os.scandir("many2"))))
print(sum(int(open("many/" + n).read() or 0) for n in os.listdir("many") if n.startswith("q")))
PY
find many many2 -type f | wc -l
du -s --apparent-size -b many2 | cut -f1 | sed 's/^[0-9]*$/sized/'
