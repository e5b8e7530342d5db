# execveat: relative to a directory descriptor, fexecve of a descriptor (AT_EMPTY_PATH) on a copied
# binary and a changed script; AT_SYMLINK_NOFOLLOW on a link
mkdir bin && cp /bin/echo bin/e && printf '#!/bin/sh\necho script "$@"\n' > bin/s.sh && chmod +x bin/s.sh
ln -s e bin/elink
/usr/bin/python3 - <<'PY'
import os, ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
def run(label, fn):
    pid = os.fork()
    if pid == 0:
        try:
            fn()
        except OSError as e:
            print(label, errno.errorcode[e.errno], flush=True)
        os._exit(9)
    _, st = os.waitpid(pid, 0)
    sys.stdout.flush()
def execveat(dirfd, path, argv, flags):
    arr = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
    env = (ctypes.c_char_p * 1)(None)
    libc.syscall(322, dirfd, path, arr, env, flags)
    raise OSError(ctypes.get_errno(), "execveat")
d = os.open("bin", os.O_RDONLY | os.O_DIRECTORY)
run("dirfd", lambda: execveat(d, b"e", ["e", "via-dirfd"], 0))
fd = os.open("bin/e", os.O_RDONLY)
run("fexecve", lambda: os.execve(fd, ["e", "via-fexecve"], {}))
run("nofollow-link", lambda: execveat(d, b"elink", ["e", "x"], 0x100))
run("empty-no-flag", lambda: execveat(fd, b"", ["e", "x"], 0))
sfd = os.open("bin/s.sh", os.O_RDONLY); os.set_inheritable(sfd, True)
run("script-fd", lambda: os.execve(sfd, ["s", "via-fd"], {"PATH": "/usr/bin:/bin"}))
open("bin/s.sh", "a").write("echo appended-line\n")
s2 = os.open("bin/s.sh", os.O_RDONLY); os.set_inheritable(s2, True)
run("changed-script-fd", lambda: os.execve(s2, ["s", "changed"], {"PATH": "/usr/bin:/bin"}))
run("dir", lambda: execveat(d, b"", ["x"], 0x1000))
PY
