# Search permission follows every change to a directory's mode and owner: fchmod through a
# descriptor, chmod, chown, on directories made in the transaction and on host ones.
mkdir -p w/d && echo hi > w/d/f && chmod 777 w
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 - <<'PY'
import os
os.chdir("w")
os.mkdir("n"); open("n/f", "w").write("x")
for d in ("n",):
    fd = os.open(d, os.O_RDONLY|os.O_DIRECTORY)
    os.fchmod(fd, 0)
    try: open(d + "/f").read(); print(d, "readable after fchmod 0")
    except OSError as e: print(d, "after fchmod 0:", e.errno)
    os.chmod(d, 0o100)
    try: print(d, open(d + "/f").read())
    except OSError as e: print(d, "after chmod 100:", e.errno)
    os.fchmod(fd, 0o700); print(d, open(d + "/f").read())
    os.close(fd)
PY
chmod 700 w/d; chown 1000 w/d
setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'cat w/d/f; chmod 0 w/d; cat w/d/f; chmod 500 w/d; cat w/d/f; chmod u-x w/d; cat w/d/f' 2>&1
chown 2000 w/d
setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'cat w/d/f' 2>&1
chmod 705 w/d
setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'cat w/d/f' 2>&1
