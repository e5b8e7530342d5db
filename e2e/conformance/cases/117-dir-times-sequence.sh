# directory times: explicit times, then entry changes (now), then explicit again; for host and new
# directories, and after renames into and out of them
old() { t=$(stat -c %Y "$1"); [ "$t" -lt 1577836800 ] && echo "$1 $t" || echo "$1 now"; }
mkdir nd
for d in dir1 nd; do
  touch -d '2005-05-05 UTC' $d; old $d
  touch $d/x; old $d
  touch -d '2006-06-06 UTC' $d; old $d
  chmod 700 $d; old $d
  mv a.txt $d/ && old $d && mv $d/a.txt . && old $d
  touch -d '2007-07-07 UTC' $d; ln b.txt $d/bl; old $d
  touch -d '2008-08-08 UTC' $d; echo data >> $d/x; old $d
  touch -d '2009-09-09 UTC' $d; mv $d ${d}-r; old ${d}-r; mv ${d}-r $d
  touch -d '2010-10-10 UTC' $d; rm $d/bl; old $d
done
touch -d '2011-11-11 UTC' dir1/sub && mv dir1/sub nd/ && old nd/sub
python3 -c '
import os
os.utime("empty", (100, 200)); fd = os.open("empty", os.O_RDONLY)
os.mkdir("empty/new"); print(os.stat("empty").st_mtime > 1577836800, os.fstat(fd).st_mtime == os.stat("empty").st_mtime or "fstat-host")
os.utime(fd, (300, 400)); print(os.stat("empty").st_mtime)'
