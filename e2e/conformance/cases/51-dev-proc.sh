# passthrough: /dev/null, /dev/zero, /proc/self inside the transaction;
# /proc/self/cwd is the virtual cwd
echo discarded > /dev/null && cat /dev/null
head -c 4096 /dev/zero | wc -c
dd if=/dev/urandom of=/dev/null bs=1k count=4 2>/dev/null && echo urandom-ok
grep -c '^Name:' /proc/self/status
grep '^Uid:' /proc/self/status | awk '{print $2}'
cat /proc/self/stat > /dev/null && echo stat-ok
stat -c '%F' /dev/null /proc/self/status
mkdir -p nd/deeper && cd nd/deeper
readlink /proc/self/cwd | sed 's|.*/t/|T/|'
python3 -c 'import os; print(os.readlink("/proc/self/cwd").split("/t/")[1], os.readlink("/proc/%d/cwd" % os.getpid()).split("/t/")[1])'
ls /proc/self/cwd/ /proc/self/cwd/..
echo via-proc > /proc/self/cwd/made-via-proc && cat made-via-proc
cat /proc/self/cwd/../../a.txt
cd ../..
python3 -c '
import os
fd = os.open("b.txt", os.O_RDONLY)
print(os.readlink(f"/proc/self/fd/{fd}").split("/t/")[1])
print(open(f"/proc/self/fd/{fd}").read(), end="")
d = os.open("dir1", os.O_RDONLY)
print(sorted(os.listdir(f"/proc/self/fd/{d}")), open(f"/proc/self/fd/{d}/c.txt").read(), end="")
os.rename("dir1", "dir1-moved")
print(os.readlink(f"/proc/self/fd/{d}").split("/t/")[1])
print(os.stat(f"/proc/self/fd/{d}/sub").st_nlink)'
echo x > /dev/null 2>&1; ls -l /dev/null | cut -c1
test -c /dev/tty -o ! -e /dev/tty && echo tty-ok
ls
