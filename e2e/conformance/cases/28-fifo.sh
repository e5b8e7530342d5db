# FIFOs made in the transaction and the fixture's own, writer and reader in one pipeline
mkfifo newfifo
stat -c '%F %a' newfifo fifo
(echo through-new-fifo > newfifo &) ; cat newfifo
(echo through-old-fifo > fifo &) ; cat fifo
{ seq 1 1000 > fifo & } ; wc -l < fifo
mkfifo -m 600 f2 && stat -c '%a' f2
mv f2 dir1/f2moved && ls dir1
python3 - <<'PY'
import os, threading
def w():
    with open("dir1/f2moved", "w") as f:
        f.write("py\n")
t = threading.Thread(target=w); t.start()
print(open("dir1/f2moved").read(), end="")
t.join()
os.mkfifo("f3", 0o640)
print(oct(os.stat("f3").st_mode))
PY
rm newfifo
ls
