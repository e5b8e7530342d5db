# A process is named (/proc/PID/comm, what ps and pgrep show) after the last
# component of the path it was executed by, not after the file that path
# resolves to: /bin/sh -> dash runs as "sh", a symlink "kitty" to cat as
# "kitty". Its /proc/PID/exe is the file itself.
sh -c 'cat /proc/$$/comm'
/bin/sh -c 'cat /proc/$$/comm; readlink /proc/$$/exe'
ps -o comm= -p $$ 2>/dev/null || cat /proc/$$/comm
ln -s /bin/cat kitty
./kitty /proc/self/comm
ln -s kitty kitten
./kitten /proc/self/comm
PATH=$PWD:$PATH kitten /proc/self/comm
cat /proc/self/comm
readlink /proc/self/exe
rm kitty kitten
