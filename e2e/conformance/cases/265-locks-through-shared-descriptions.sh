# flock(1) through a descriptor the shell holds and flock inherits (exec 9<file, flock 9),
# whose open file description stays on the unchanged host file: two such shells exclude each
# other, and a flock(1) of the file, as natively; the lock goes with flock -u and with the
# holding shell's exit, and a blocking flock waits until then (FIFO handshakes)
mkfifo held go
(exec 9<a.txt; flock -n 9; echo "a $?"; echo x > held; read x < go; flock -u 9; echo "a unlocked"; echo x > held; read x < go) &
exec 9<a.txt
read x < held; flock -n 9; echo "b $?"; flock -n a.txt true; echo "other $?"; echo x > go
read x < held; flock -n 9; echo "b $?"; flock -u 9; echo x > go
wait
(exec 8<a.txt; flock 8; echo x > held; read x < go; echo "c exits") &
read x < held
flock 9 & pid=$!
while :; do
  case "$(cat /proc/$pid/syscall 2>/dev/null)" in "73 "*) echo "b waits"; break;; esac
  case "$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null)" in Z|"") echo "b did not wait"; break;; esac
done
echo x > go
wait $pid; echo "b $?"
wait
exec 9<&-
rm held go
cat a.txt
