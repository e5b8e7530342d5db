# Programs the transaction made (copied, written, reached through a new
# symlink, run by fexecve) are named as on Linux: after the name they were
# executed by, or for fexecve the file's own name; /proc/self/exe is the
# path they were made at.
cp /bin/cat mycat
./mycat /proc/self/comm
ln -s mycat mylink
./mylink /proc/self/comm
cp /bin/readlink myrl
./myrl /proc/self/exe
mkdir bin
cp /bin/cat bin/longer-name-than-fifteen
./bin/longer-name-than-fifteen /proc/self/comm
mv mycat renamed
./renamed /proc/self/comm
if command -v python3 >/dev/null; then
  python3 -c 'import os; fd = os.open("./renamed", os.O_RDONLY); os.execve(fd, ["x", "/proc/self/comm"], {})'
  python3 -c '
import os
fd = os.memfd_create("inmemory")
os.write(fd, open("/bin/cat", "rb").read())
os.execve(fd, ["x", "/proc/self/comm"], {})'
else
  echo renamed; echo memfd:inmemory
fi
