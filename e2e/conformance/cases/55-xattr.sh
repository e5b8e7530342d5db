# extended attributes on new files, copied-up files, new directories and symlinks;
# ACLs set by setxattr (which also set the mode)
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
mkdir acl-dir && chmod 700 acl-dir
setfacl -m u:1000:rx acl-dir 2>/dev/null || python3 -c '
import os, struct
# system.posix_acl_access: version 2, USER_OBJ rwx, GROUP_OBJ r-x, OTHER r-x
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, 0xFFFFFFFF) for t, p in [(1, 7), (4, 5), (0x20, 5)])
os.setxattr("acl-dir", "system.posix_acl_access", acl)'
stat -c '%a' acl-dir
