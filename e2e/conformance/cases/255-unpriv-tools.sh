# coreutils/util-linux as an unprivileged user: tar xpf (chown silently kept to self), cp -a of
# root files, install -m, mktemp -d, chmod -R, ln -sfn over a link to a dir, mv -T, rm -rf of a
# tree with an unreadable 000 dir, find -delete, touch -r
u() { setpriv --reuid 1000 --regid 1000 --clear-groups env HOME=/nonexistent sh -c "$*" 2>&1 | sed 's/^[^:]*: //'; }
tar cf /tmp/probeB-$$.tar --owner=0 --group=0 --mtime=2001-01-01 dir1 ro.txt
u "cd userdir && tar xpf /tmp/probeB-$$.tar && ls -lnR dir1 ro.txt | awk 'NF>2 {print \$1, \$3, \$4, \$NF}'"
rm -f /tmp/probeB-$$.tar
u 'cp -a a.txt exec.sh dir-ro userdir/ && ls -ln userdir | awk "NR>1 {print \$1, \$3, \$NF}"'
u 'cp -a b.txt userdir/'
u 'install -m 4755 exec.sh userdir/inst && ls -ln userdir/inst | cut -c1-10'
u 'cd userdir && d=$(mktemp -d ./tmp.XXXXXX) && ls -ld "$d" | cut -c1-10 && rmdir "$d"'
u 'chmod -R go-rx userdir/dir1 && ls -ld userdir/dir1 userdir/dir1/sub | cut -c1-10'
u 'cd userdir && mkdir t1 t2 && ln -sfn t1 cur && ln -sfn t2 cur && readlink cur && ls t1 t2'
u 'cd userdir && mkdir t3 && mv -T t3 t1 && ls -d t*'
u 'cd userdir && mkdir -p z/a/b && touch z/a/b/f && chmod 000 z/a && rm -rf z; ls z 2>/dev/null | wc -l'
u 'cd userdir && chmod 700 z/a && rm -rf z && echo removed'
u 'cd userdir && mkdir -p fd/x/y && touch fd/x/y/1 fd/x/2 && find fd -name "[12]" -delete && find fd | sort'
u 'cd userdir && touch -r ../a.txt ref && test ref -nt ../b.txt -o ref -ot ../b.txt || echo same-time'
u 'cd userdir && ln -s ../b.txt lb && cat lb'
u 'mkdir -m 1777 userdir/sticky && ls -ld userdir/sticky | cut -c1-10'
u 'chmod g+s userdir/sticky && ls -ld userdir/sticky | cut -c1-10'
u 'cd userdir && umask 027 && mkdir um && : > um/f && ls -ld um um/f | cut -c1-10'
