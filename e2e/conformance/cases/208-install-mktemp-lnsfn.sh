# install -D -m (creating parents), install -d, mktemp -d then rm -r, ln -sfn replacing a
# symlink to a directory (and ln -sf without -n descending into it)
install -D -m 640 a.txt deep/er/path/a.txt
install -d -m 700 d1/d2
install -m 4755 exec.sh dir1/x.sh
install -C -m 644 b.txt b.copy; install -C -m 644 b.txt b.copy
stat -c '%n %a %s' deep deep/er deep/er/path deep/er/path/a.txt d1 d1/d2 dir1/x.sh b.copy
t=$(mktemp -d ./tmp.XXXXXX); touch "$t/f"; mkdir "$t/g"; rm -r "$t"; ls -d tmp.* 2>&1 | sed 's/tmp\.[^:]*/tmp.X/'
t=$(mktemp ./f.XXXXXX); stat -c '%a %s' "$t"; mv "$t" fixed-temp
ln -s dir1 cur
ln -sfn empty cur; readlink cur
ln -sf dir1 cur; readlink cur; ls empty
ln -sfn dir1/sub cur; readlink cur
ln -sfT a.txt empty 2>&1 | sed 's/.*: //'
ln -sfn b.txt dangling; readlink dangling
