# access(2) as another user (setpriv) after the transaction changed modes, owners and
# directories: test -r/-w/-x, eaccess vs access, on made and host objects
chmod 600 a.txt; chown 1000 b.txt; chmod 700 dir1; mkdir m; chmod 711 m; touch m/f; chmod 604 m/f
chmod 000 user.txt
for u in 1000 2000; do
  setpriv --reuid=$u --regid=$u --clear-groups sh -c '
    for p in a.txt b.txt dir1 dir1/c.txt m m/f user.txt userdir exec.sh; do
      r=-; w=-; x=-
      test -r "$p" && r=r; test -w "$p" && w=w; test -x "$p" && x=x
      echo "$(id -u) $p $r$w$x"
    done'
done
setpriv --reuid=1000 --regid=1000 --clear-groups perl -e 'print join(" ", map { (-r $_ ? "r" : "-") . (-w $_ ? "w" : "-") } qw(b.txt m/f link-to-a)), "\n"'
