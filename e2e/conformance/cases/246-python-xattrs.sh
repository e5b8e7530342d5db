# python extended attributes: user.* on files, directories, symlinks (EPERM) and fifos,
# XATTR_CREATE/REPLACE, ERANGE-free listing, shutil.copystat/copy2 carrying them, removal,
# and an unprivileged user on others' files
python3 - <<'PY'
import os, errno, shutil
def t(label, f, *a, **k):
    try: r = f(*a, **k); print(label, "ok" if r is None else r)
    except OSError as e: print(label, errno.errorcode[e.errno])
try:
    os.setxattr("a.txt", "user.probe", b"1")
except OSError as e:
    print("no user xattrs here"); raise SystemExit
t("set", os.setxattr, "a.txt", "user.k", b"v1")
t("get via hard link", os.getxattr, "hard-a", "user.k")
t("get via symlink", os.getxattr, "link-to-a", "user.k")
t("lget symlink", os.getxattr, "link-to-a", "user.k", follow_symlinks=False)
t("lset symlink", os.setxattr, "link-to-a", "user.k", b"x", follow_symlinks=False)
t("create existing", os.setxattr, "a.txt", "user.k", b"v2", os.XATTR_CREATE)
t("replace missing", os.setxattr, "a.txt", "user.none", b"v2", os.XATTR_REPLACE)
t("replace", os.setxattr, "a.txt", "user.k", b"v3", os.XATTR_REPLACE)
t("get", os.getxattr, "a.txt", "user.k")
t("get missing", os.getxattr, "a.txt", "user.none")
t("list", lambda: sorted(os.listxattr("a.txt")))
t("dir set", os.setxattr, "dir1", "user.d", b"dv")
t("dir list after rename", lambda: (os.rename("dir1", "dir1-r"), sorted(os.listxattr("dir1-r")))[1])
t("fifo set", os.setxattr, "fifo", "user.f", b"fv")
t("empty value", os.setxattr, "b.txt", "user.empty", b"")
t("get empty", os.getxattr, "b.txt", "user.empty")
t("bad namespace", os.setxattr, "b.txt", "nons", b"x")
t("trusted", os.setxattr, "b.txt", "trusted.t", b"x")
t("trusted get", os.getxattr, "b.txt", "trusted.t")
shutil.copy2("a.txt", "a-copy")
t("copy2 carried", lambda: sorted(os.listxattr("a-copy")))
os.rename("a.txt", "a-renamed")
with open("a-renamed", "a") as f: f.write("more\n")
t("after write", lambda: sorted(os.listxattr("a-renamed")))
t("remove", os.removexattr, "a-renamed", "user.k")
t("remove again", os.removexattr, "a-renamed", "user.k")
t("hard link sees removal", lambda: sorted(os.listxattr("hard-a")))
fd = os.open("b.txt", os.O_RDONLY)
t("fset", os.setxattr, fd, "user.viafd", b"fd")
os.close(fd)
t("list b", lambda: sorted(os.listxattr("b.txt")))
t("big value", os.setxattr, "b.txt", "user.big", b"x" * 70000)
pid = os.fork()
if pid == 0:
    os.setgroups([]); os.setresgid(1000, 1000, 1000); os.setresuid(1000, 1000, 1000)
    t("user on root file", os.setxattr, "ro.txt", "user.u", b"x")
    t("user get on 0600 file", os.getxattr, "b.txt", "user.empty")
    t("user on own file", os.setxattr, "user.txt", "user.u", b"mine")
    t("user trusted", os.setxattr, "user.txt", "trusted.u", b"x")
    t("user list readable", lambda: sorted(os.listxattr("a-copy")))
    os._exit(0)
os.waitpid(pid, 0)
t("user.txt", lambda: sorted(os.listxattr("user.txt")))
PY
