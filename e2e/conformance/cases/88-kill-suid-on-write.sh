# a write or truncate by an unprivileged user clears set-user-ID, and set-group-ID only
# together with group execute; root's writes keep them
as() { setpriv --reuid 1000 --regid 1000 --clear-groups "$@" 2>&1; }
for m in 6777 2766 4766 2776 6666; do
  printf 'x\n' > w$m; chmod $m w$m; as sh -c "echo y >> w$m"
  printf 'x\n' > t$m; chmod $m t$m; as truncate -s 1 t$m
done
printf 'x\n' > r6777; chmod 6777 r6777; echo root >> r6777
chown 1000 user.txt; chmod 6777 user.txt; as sh -c 'echo own >> user.txt'
chmod 6777 a.txt; as sh -c 'echo h >> hard-a'
stat -c '%n %a' w* t* r6777 user.txt a.txt
