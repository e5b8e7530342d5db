# determ.py DIR: the Python half of TestDeterministic* (see determ.c).
import os, random, subprocess, sys, tempfile, time, uuid

os.chdir(sys.argv[1])
lines = [
    "time %r monotonic %r" % (time.time(), time.monotonic()),
    "random %r %r" % (random.random(), random.randint(0, 1 << 30)),
    "urandom %s" % os.urandom(8).hex(),
    "uuid4 %s" % uuid.uuid4(),
]
fd, name = tempfile.mkstemp(dir=".", prefix="py-")
os.write(fd, b"made by tempfile\n")
os.close(fd)
lines.append("mkstemp %s" % os.path.basename(name))
with tempfile.NamedTemporaryFile(dir=".", prefix="named-", delete=False) as named:
    named.write(b"named\n")
lines.append("NamedTemporaryFile %s" % os.path.basename(named.name))
lines.append("pid %d ppid %d" % (os.getpid(), os.getppid()))
os.mkdir("pymade")
for n in random.sample(range(1000), 6):
    open("pymade/p%d" % n, "w").close()
lines.append("listdir pymade %s" % os.listdir("pymade"))
lines.append("listdir hostdir %s" % os.listdir("hostdir"))
lines.append("cpu_count %s hostname %s" % (os.cpu_count(), os.uname().nodename))
lines.append("date %s" % subprocess.run(["date"], capture_output=True, text=True).stdout.strip())
time.sleep(2)
lines.append("after sleep %r" % time.time())
with open("py-values.txt", "w") as out:
    out.write("\n".join(lines) + "\n")
for p in ("py-values.txt", name, named.name):
    st = os.stat(p)
    lines.append("%s mtime %d ino %d" % (os.path.basename(p), st.st_mtime_ns, st.st_ino))
print("\n".join(lines))
