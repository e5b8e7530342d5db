# shell job control inside the tree: background writers, wait, kill, timeout, traps that clean up
# temporary files, a subshell killed by a signal, setsid and double-forked writers
tmp=$(mktemp -d "$PWD/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(for i in 1 2 3; do echo bg$i >> "$tmp/log"; done) &
wait $!
cat "$tmp/log"
sleep 30 & pid=$!; kill $pid; wait $pid; echo "killed rc=$?"
timeout 1 sleep 10; echo "timeout rc=$?"
timeout -s KILL 1 sh -c 'echo started > started.txt; sleep 10'; echo "kill rc=$?"; cat started.txt
sh -c 'trap "echo trapped > trapped.txt; exit 3" TERM; kill -TERM $$; sleep 5'; echo "trap rc=$?"; cat trapped.txt
setsid sh -c 'echo from-setsid > setsid.txt' ; cat setsid.txt
sh -c '(sh -c "sleep 0.2; echo orphan > orphan.txt" &) ; exit 0'
while [ ! -s orphan.txt ]; do sleep 0.1; done; cat orphan.txt
python3 -c '
import os, signal, time
pid = os.fork()
if pid == 0:
    open("child-started", "w").close()
    time.sleep(30)
    os._exit(0)
while not os.path.exists("child-started"):
    time.sleep(0.01)
os.kill(pid, signal.SIGKILL)
print(os.waitpid(pid, 0)[1] & 0x7f)'
ls | grep -v tmp
