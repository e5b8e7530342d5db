# appending: >>, O_APPEND writes after a seek, tee -a, two writers appending in turn; root writes
# a 0444 file; a truncating open of a file another descriptor still reads (opened after the
# file's first change: one opened before stays on the original, docs/semantics.md)
echo first >> b.txt
echo second >> b.txt
printf 'tee\n' | tee -a b.txt >/dev/null
python3 - <<'PY'
import os
fd = os.open("b.txt", os.O_WRONLY | os.O_APPEND)
os.lseek(fd, 0, os.SEEK_SET)
os.write(fd, b"after-seek\n")
print("offset", os.lseek(fd, 0, os.SEEK_CUR) == os.fstat(fd).st_size)
os.close(fd)
a = open("two", "a"); b = open("two", "a")
for i in range(3):
    a.write(f"a{i}\n"); a.flush(); b.write(f"b{i}\n"); b.flush()
a.close(); b.close()
open("dir1/c.txt", "a").write("changed\n")
r = open("dir1/c.txt")
open("dir1/c.txt", "w").write("short\n")
print("reader sees", repr(r.read()))
PY
cat b.txt two
echo root-may >> ro.txt && cat ro.txt
stat -c '%n %s %a' b.txt two ro.txt dir1/c.txt
