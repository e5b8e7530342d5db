# root opens files, then drops privileges within the same process (python setresuid); the
# open descriptors keep working, new opens are checked with the new credentials
python3 - <<'PY'
import os
fd = os.open("b.txt", os.O_RDONLY)
wfd = os.open("newroot", os.O_WRONLY | os.O_CREAT, 0o600)
os.setgroups([])
os.setresgid(1000, 1000, 1000)
os.setresuid(1000, 1000, 1000)
print(os.read(fd, 100))
os.write(wfd, b"written after drop\n"); os.close(wfd)
for p, fl in [("b.txt", os.O_RDONLY), ("newroot", os.O_RDONLY), ("a.txt", os.O_WRONLY), ("x", os.O_CREAT|os.O_WRONLY)]:
    try:
        os.close(os.open(p, fl, 0o644)); print(p, "ok")
    except OSError as e:
        print(p, e.strerror)
os.chdir("userdir")
with open("f", "w") as f: f.write("u\n")
st = os.stat("f"); print(st.st_uid, st.st_gid, oct(st.st_mode))
try:
    os.setresuid(0, 0, 0)
except OSError as e:
    print("regain", e.strerror)
print(os.access("../b.txt", os.R_OK), os.access("f", os.W_OK), os.access("../dir-ro", os.W_OK))
PY
ls -ln newroot | awk '{print $1, $3, $4}'
cat newroot
