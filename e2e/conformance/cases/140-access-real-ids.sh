# access(2) and faccessat without AT_EACCESS check with the real uid and gid, and a real root
# keeps its permitted capabilities for it (access_override_creds); AT_EACCESS checks with the
# effective ids and capabilities
/usr/bin/python3 - <<'PY'
import os
def show(label):
    print(label,
          [os.access(p, os.W_OK) for p in ("user.txt", "dir-ro", "ro.txt", "b.txt")],
          [os.access(p, os.W_OK, effective_ids=True) for p in ("user.txt", "userdir", "ro.txt")],
          os.access("ro.txt", os.R_OK), os.access("exec.sh", os.X_OK), os.access("a.txt", os.X_OK))
pid = os.fork()
if pid == 0:
    os.setresuid(0, 1000, 0)
    show("real-root-euid-1000")
    os._exit(0)
os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    os.setresgid(1000, 1000, 1000)
    os.setresuid(1000, 0, 0)
    show("real-1000-euid-root")
    os._exit(0)
os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    os.setgroups([])
    os.setresgid(1000, 1000, 1000)
    os.setresuid(1000, 1000, 1000)
    show("user-1000")
    os._exit(0)
os.waitpid(pid, 0)
PY
