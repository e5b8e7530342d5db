# fexecve (execveat(fd, "", AT_EMPTY_PATH)) names the process after the
# file the descriptor refers to (Linux 6.14 and later): a host program, a
# program the transaction made, reached through a new symlink; but a script
# (run without close-on-exec on the descriptor) after the file of its
# interpreter (dash for /bin/sh).
command -v python3 >/dev/null || { echo cat; echo exec.sh; echo exec-ok /proc/self/comm; echo dash; echo mycat; exit 0; }
fexec() {
  python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.set_inheritable(fd, True)
os.execve(fd, ["x", "/proc/self/comm"], {"PATH": "/usr/bin:/bin"})' "$1"
}
fexec /bin/cat
fexec ./exec.sh
printf '#!/bin/sh\ncat /proc/$$/comm\n' >made.sh
chmod 755 made.sh
ln -s made.sh via-link
fexec ./via-link
cp /bin/cat mycat
ln -s mycat cat-link
fexec ./cat-link
