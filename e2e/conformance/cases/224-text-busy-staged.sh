# a program the transaction made, while it runs: opening it for writing, truncating it and
# cp over it fail with ETXTBSY; rename over it and unlink work; exec of a file open for
# writing fails with ETXTBSY
cp "$(command -v sleep)" prog; cp prog prog2
./prog 3 & p=$!
# wait until the background shell has exec'd the program
i=0; while [ $i -lt 100 ] && case $(readlink /proc/$p/exe) in */dash|*/sh|*/bash) true;; *) false;; esac; do sleep 0.05; i=$((i+1)); done
python3 - <<'PY'
import os, errno, subprocess
def t(label, f):
    try: f(); print(label, "ok")
    except OSError as e: print(label, errno.errorcode[e.errno])
t("open-w", lambda: os.close(os.open("prog", os.O_WRONLY)))
t("open-trunc", lambda: os.close(os.open("prog", os.O_RDONLY | os.O_TRUNC)))
t("truncate", lambda: os.truncate("prog", 0))
t("open-r", lambda: os.close(os.open("prog", os.O_RDONLY)))
t("chmod", lambda: os.chmod("prog", 0o700))
fd = os.open("prog2", os.O_RDWR)
t("exec-open-for-write", lambda: subprocess.run(["./prog2", "0"]))
os.close(fd)
t("exec-after-close", lambda: subprocess.run(["./prog2", "0"]))
PY
cp prog2 prog 2>&1 | sed 's/^cp: //'
ln prog prog-link; mv prog2 prog; ls prog*
kill $p; wait $p 2>/dev/null
echo > prog-link; stat -c '%n %s %a' prog prog-link
