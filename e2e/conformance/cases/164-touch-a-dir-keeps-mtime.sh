# setting only the access time of a directory whose entries changed (touch -a, UTIME_OMIT for
# mtime) leaves its modification time as the entry change set it; setting only the
# modification time leaves the access time
touch dir1/newf
touch -a -d '2005-01-01 UTC' dir1
t=$(stat -c %Y dir1); [ "$t" -gt 1577836800 ] && echo mtime-now || echo "mtime $t"
stat -c '%X' dir1
touch -a -d "2004-01-01 UTC" dir1/sub; mkdir dir1/sub/new
touch -m -d '2006-01-01 UTC' dir1/sub
stat -c '%X %Y' dir1/sub
rm dir1/newf
python3 -c '
import os
os.utime("dir1", ns=(7 * 10**9, os.stat("dir1").st_mtime_ns))
st = os.stat("dir1"); print(st.st_atime, st.st_mtime > 1577836800)'
