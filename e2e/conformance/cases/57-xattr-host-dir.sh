# extended attributes on a directory and a hard-linked file that exist on the host
python3 - <<'PY'
import os, errno
def t(label, f, *a):
    try:
        r = f(*a); print(label, "ok" if r is None else r)
    except OSError as e:
        print(label, errno.errorcode[e.errno])
t("set dir", os.setxattr, "empty", "user.d", b"1")
t("get dir", os.getxattr, "empty", "user.d")
t("set hard-linked", os.setxattr, "a.txt", "user.h", b"2")
t("get other name", os.getxattr, "hard-a", "user.h")
PY
