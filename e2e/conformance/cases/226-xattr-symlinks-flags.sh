# xattrs on symlinks (user.* refused, trusted.* allowed for root), XATTR_CREATE/REPLACE,
# ENODATA, empty values, size queries, on host and made objects and after a rename
python3 - <<'PY'
import os, errno
def t(label, f):
    try: r = f(); print(label, "ok", r if r is not None else "")
    except OSError as e: print(label, errno.errorcode[e.errno])
os.symlink("a.txt", "made-link")
for p in ["link-to-a", "made-link", "dangling"]:
    t("user-on-link " + p, lambda: os.setxattr(p, "user.k", b"v", follow_symlinks=False))
    t("trusted-on-link " + p, lambda: os.setxattr(p, "trusted.k", b"v", follow_symlinks=False))
    t("list " + p, lambda: sorted(os.listxattr(p, follow_symlinks=False)))
t("user-through-link", lambda: os.setxattr("link-to-a", "user.t", b"via"))
t("get-on-target", lambda: os.getxattr("a.txt", "user.t"))
t("get-on-hardlink", lambda: os.getxattr("hard-a", "user.t"))
t("create-existing", lambda: os.setxattr("a.txt", "user.t", b"x", os.XATTR_CREATE))
t("replace-missing", lambda: os.setxattr("a.txt", "user.none", b"x", os.XATTR_REPLACE))
t("replace", lambda: os.setxattr("a.txt", "user.t", b"", os.XATTR_REPLACE))
t("get-empty", lambda: os.getxattr("a.txt", "user.t"))
t("remove-missing", lambda: os.removexattr("b.txt", "user.none"))
t("get-missing", lambda: os.getxattr("b.txt", "user.none"))
t("bad-namespace", lambda: os.setxattr("b.txt", "bogus.k", b"v"))
t("empty-name", lambda: os.setxattr("b.txt", "user.", b"v"))
t("on-fifo-user", lambda: os.setxattr("fifo", "user.k", b"v"))
t("on-dir", lambda: os.setxattr("dir1", "user.d", b"1" * 3000))
os.rename("dir1", "dir2")
t("after-rename", lambda: len(os.getxattr("dir2", "user.d")))
t("trusted-link-get", lambda: os.getxattr("made-link", "trusted.k", follow_symlinks=False))
os.rename("made-link", "dir2/ml")
t("trusted-link-moved", lambda: os.getxattr("dir2/ml", "trusted.k", follow_symlinks=False))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("size-query", libc.getxattr(b"dir2", b"user.d", None, 0))
buf = ctypes.create_string_buffer(10)
print("small-buf", libc.getxattr(b"dir2", b"user.d", buf, 10), errno.errorcode.get(ctypes.get_errno()))
print("list-size", libc.listxattr(b"a.txt", None, 0))
PY
