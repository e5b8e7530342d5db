# ELOOP: loops, self-links, chains longer than 40; ".." after a symlink
ln -s loop2 loop1; ln -s loop1 loop2; ln -s self self
cat loop1 2>&1
cat self 2>&1
ls loop1/x 2>&1
i=0; prev=a.txt
while [ $i -lt 41 ]; do ln -s $prev c$i; prev=c$i; i=$((i+1)); done
cat c39 && cat c40 2>&1
ln -s dir1/sub sl
cat sl/../c.txt
ls sl/..
ls sl/../..//dir1 | head -1
python3 - <<'PY'
import os, errno
for p, fl in [("loop1", os.O_RDONLY), ("link-to-a", os.O_RDONLY | os.O_NOFOLLOW),
              ("self/x", os.O_RDONLY), ("c40", os.O_RDONLY), ("c39", os.O_RDONLY),
              ("sl/../sub/d.txt", os.O_RDONLY), ("dangling/", os.O_RDONLY),
              ("link-to-a/", os.O_RDONLY)]:
    try:
        os.close(os.open(p, fl)); print(p, "ok")
    except OSError as e:
        print(p, errno.errorcode[e.errno])
print(os.path.realpath("sl/.."))
print(os.stat("loop1", follow_symlinks=False).st_mode >> 12)
PY
rm loop1 loop2 self
