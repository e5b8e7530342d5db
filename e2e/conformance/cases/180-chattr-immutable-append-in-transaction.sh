# chattr +i / +a on files and a directory the transaction itself made: Linux enforces them at
# once (no removal, rename, writes, mode change; append-only files only grow) and lsattr shows
# them. Under txexec the staged copies carry the flags, yet the commit must still place them
# (write-through sets the flags after the renames). The flags are cleared at the end only so
# that the test runner can remove the tree.
printf 'nameserver 192.0.2.1\n' > resolv.conf
chattr +i resolv.conf
lsattr resolv.conf | cut -c5
rm -f resolv.conf 2>/dev/null || echo "rm refused"
mv resolv.conf moved.conf 2>/dev/null || echo "mv refused"
ln resolv.conf hard.conf 2>/dev/null || echo "link refused"
chmod 600 resolv.conf 2>/dev/null || echo "chmod refused"
(echo more >> resolv.conf) 2>/dev/null || echo "append refused"
printf 'one\n' > log
chattr +a log
printf 'two\n' >> log
(printf 'x\n' > log) 2>/dev/null || echo "truncate refused"
rm -f log 2>/dev/null || echo "rm log refused"
lsattr log | cut -c6
mkdir locked
touch locked/inside
chattr +i locked
touch locked/new 2>/dev/null || echo "create refused"
rm -f locked/inside 2>/dev/null || echo "rm inside refused"
chattr -i locked resolv.conf; chattr -a log
cat resolv.conf log
ls locked
