# tar -p extracting symlinks (glibc's fchmodat(AT_SYMLINK_NOFOLLOW) opens the
# link with O_PATH|O_NOFOLLOW), O_PATH descriptors on links, FIFOs and
# unreadable files; a write by an unprivileged user clears the set-user-ID
# bit of a hard-linked file, and the commit keeps it cleared.
mkdir src && echo one > src/a && ln -s a src/l && ln -s /nonexistent src/dangling && ln src/a src/h
chmod 640 src/a && mkdir src/d && chmod 700 src/d
tar cf t.tar --sort=name --mtime='2002-02-02 UTC' --owner=0 --group=0 src
mkdir x && tar xpf t.tar -C x && find x/src -printf '%p %y %m %n %l %T@\n' | sort
tar tvf t.tar | awk '{print $1, $6, $7, $8}'
python3 - <<'PY'
import os, stat, errno
for p in ["link-to-a", "dangling", "fifo", "b.txt", "dir1"]:
    fd = os.open(p, os.O_PATH | os.O_NOFOLLOW)
    st = os.stat(fd)
    print(p, stat.filemode(st.st_mode), os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[1])
    os.close(fd)
try:
    os.open("link-to-a", os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY)
except OSError as e:
    print("O_DIRECTORY on a link", errno.errorcode[e.errno])
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.fchmodat(-100, b"link-to-a", 0o600, 0x100)
print("fchmodat(AT_SYMLINK_NOFOLLOW) on a link", r, errno.errorcode.get(ctypes.get_errno()) if r else "")
PY
chown 1000:1000 user.txt && ln user.txt user-link && chmod 4755 user.txt
setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'echo appended >> user-link'
stat -c '%n %a %h' user.txt user-link
