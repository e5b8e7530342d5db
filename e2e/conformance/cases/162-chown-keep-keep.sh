# chown(path, -1, -1) changes no owner: it succeeds on a host directory, a hard-linked host file
# and a plain one, clears set-user-ID and group-executable set-group-ID of a file (a mode change,
# so EPERM for a non-owner of such a file) and keeps the set-ID bits of a directory
chmod 6755 exec.sh; chmod 2775 dir1; cp a.txt suid; chmod 4644 suid; ln suid suid-link
python3 - <<'PY'
import os, errno
for p in ["dir1", "a.txt", "b.txt", "exec.sh", "suid-link", "user.txt"]:
    try:
        os.chown(p, -1, -1); print(p, "ok", oct(os.stat(p).st_mode))
    except OSError as e:
        print(p, errno.errorcode[e.errno])
PY
chmod 4755 user.txt exec.sh
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 - <<'PY'
import os, errno
for p in ["exec.sh", "a.txt", "user.txt", "dir1"]:
    try:
        os.chown(p, -1, -1); print(p, "ok", oct(os.stat(p).st_mode))
    except OSError as e:
        print(p, errno.errorcode[e.errno])
PY
