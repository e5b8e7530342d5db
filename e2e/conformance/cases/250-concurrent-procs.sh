# several processes at once: os.makedirs(exist_ok) of the same tree, O_EXCL lock files (one
# winner), rename onto one target, O_APPEND writers, mkdir/rmdir churn of one name
python3 - <<'PY'
import os, sys, errno
N = 8
def run(f):
    pids = []
    for i in range(N):
        pid = os.fork()
        if pid == 0:
            try: code = f(i)
            except Exception as e: print("child", i, type(e).__name__, e); code = 99
            os._exit(code or 0)
        pids.append(pid)
    return sorted(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids)
print("makedirs", run(lambda i: [os.makedirs("race/a/b/c/d", exist_ok=True) for _ in range(20)] and 0))
def lock(i):
    try: os.close(os.open("race/lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY)); return 1
    except FileExistsError: return 0
print("excl winners", sum(run(lock)))
def ren(i):
    for k in range(10):
        p = "race/r%d-%d" % (i, k)
        with open(p, "w") as f: f.write("%d\n" % i)
        os.rename(p, "race/target")
print("rename", run(ren), len(open("race/target").read()), sorted(os.listdir("race")))
def app(i):
    fd = os.open("race/log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for k in range(50): os.write(fd, b"%d %02d\n" % (i, k))
    os.close(fd)
run(app)
lines = open("race/log").read().splitlines()
print("append lines", len(lines), len(set(lines)), all(len(l) == 4 for l in lines))
def churn(i):
    bad = 0
    for k in range(30):
        try: os.mkdir("race/churn")
        except FileExistsError: pass
        try: os.rmdir("race/churn")
        except FileNotFoundError: pass
        except OSError as e: bad += 1
    return 1 if bad else 0
print("churn", run(churn), os.path.exists("race/churn"))
def lnk(i):
    try: os.link("race/log", "race/hl"); return 1
    except FileExistsError: return 0
print("link winners", sum(run(lnk)), os.stat("race/log").st_nlink)
# the interleaving is the scheduler's: keep only what is deterministic
with open("race/log", "r+") as f:
    data = "".join(sorted(f.readlines())); f.seek(0); f.write(data)
open("race/target", "w").write("x\n")
PY
