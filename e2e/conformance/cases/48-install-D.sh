# install -D, install -d, install -m, install over existing files
install -D -m 640 a.txt x/y/z/a
stat -c '%n %a %h' x/y/z/a x/y/z x
cat x/y/z/a
install -d -m 700 p/q/r && stat -c '%a' p/q/r p/q
install -m 755 exec.sh x/y/run && x/y/run installed
install -m 600 b.txt ro.txt && stat -c '%a' ro.txt && cat ro.txt
install -o 1000 -g 1000 a.txt owned && stat -c '%u %g %a' owned
install -D a.txt dir-ro/sub/f && ls dir-ro/sub
install -t empty a.txt b.txt && ls empty
install -C -m 644 a.txt owned && stat -c '%u %a' owned
install -D dir1/c.txt a.txt/x 2>&1
find x p | sort
