# a write by an unprivileged user clears set-user-ID; the commit keeps it cleared even when the
# name the file was first found by is gone
chmod 4777 a.txt
rm a.txt
setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'echo x >> hard-a'
stat -c '%n %a' hard-a
