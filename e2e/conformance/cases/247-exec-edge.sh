# exec edge cases: no execute bit, a directory, a missing interpreter, a #! chain into the
# tree, chmod +x made in the transaction, a symlink to a script, ETXTBSY writing a running
# program and exec of a file open for writing, a script without #!
e() { o=$("$@" 2>&1); r=$?; printf '%s\n' "$o" | sed "s|$PWD/||; s/^[^:]*: //"; echo "rc=$r"; }
printf '#!/bin/sh\necho script "$0" "$@"\n' > s1; e ./s1
chmod +x s1; e ./s1 a b
printf '#!./s1 x\n' > s2; chmod +x s2; e ./s2 y
printf '#!/nonexistent/interp\n' > s3; chmod +x s3; e ./s3
printf 'echo no-shebang\n' > s4; chmod +x s4; e ./s4
e ./dir1
ln -s s1 s1-link; e ./s1-link via-link
mkdir bin; ln -s ../s1 bin/tool; PATH=$PWD/bin:$PATH e tool on-path
chmod 644 exec.sh; e ./exec.sh
chmod 755 exec.sh; e ./exec.sh back
cp /bin/true ./mytrue; e ./mytrue
python3 - <<'PY'
import os, subprocess, errno, shutil, time
shutil.copy("/bin/sleep", "mysleep")
p = subprocess.Popen(["./mysleep", "2"])
time.sleep(0.3)
try:
    os.open("mysleep", os.O_WRONLY); print("opened running program for writing")
except OSError as e:
    print("write running:", errno.errorcode[e.errno])
p.kill(); p.wait()
fd = os.open("mytrue", os.O_WRONLY)
try:
    subprocess.run(["./mytrue"]); print("exec while open for writing ran")
except OSError as e:
    print("exec open-for-write:", errno.errorcode[e.errno])
os.close(fd)
print("after close rc", subprocess.run(["./mytrue"]).returncode)
PY
rm -f mysleep mytrue
