# extended attributes on new files, copied-up files, directories and symlinks
python3 - <<'PY'
import os, errno
def t(label, f, *a, **kw):
    try:
        r = f(*a, **kw); print(label, "ok" if r is None else r)
    except OSError as e:
        print(label, errno.errorcode[e.errno])
open("nx", "w").write("x")
t("set new", os.setxattr, "nx", "user.color", b"blue")
t("get new", os.getxattr, "nx", "user.color")
t("list new", lambda p: sorted(os.listxattr(p)), "nx")
t("set host", os.setxattr, "b.txt", "user.color", b"red")
t("get host", os.getxattr, "b.txt", "user.color")
t("get missing", os.getxattr, "b.txt", "user.nope")
t("create existing", os.setxattr, "b.txt", "user.color", b"x", os.XATTR_CREATE)
t("replace missing", os.setxattr, "b.txt", "user.other", b"x", os.XATTR_REPLACE)
t("remove", os.removexattr, "b.txt", "user.color")
t("list after remove", lambda p: sorted(os.listxattr(p)), "b.txt")
t("set dir", os.setxattr, "empty", "user.d", b"1")
t("get dir", os.getxattr, "empty", "user.d")
t("set symlink nofollow", os.setxattr, "link-to-a", "user.l", b"1", 0, follow_symlinks=False)
t("set newdir", lambda: (os.mkdir("nd"), os.setxattr("nd", "user.n", b"2")))
t("get newdir", os.getxattr, "nd", "user.n")
t("trusted", os.setxattr, "nx", "trusted.t", b"3")
t("get trusted", os.getxattr, "nx", "trusted.t")
PY
setpriv --reuid 1000 --regid 1000 --clear-groups /usr/bin/python3 -c '
import os, errno
for p in ["nx", "user.txt", "b.txt"]:
    try:
        os.setxattr(p, "user.u", b"1"); print(p, "ok")
    except OSError as e:
        print(p, errno.errorcode[e.errno])
print(os.getxattr("user.txt", "user.u"))'
