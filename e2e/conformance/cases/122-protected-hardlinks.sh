# fs.protected_hardlinks for an unprivileged user: own files, read-write files of others,
# set-user-ID and set-group-ID files, read-only files, FIFOs, symlinks
mkdir pub && chmod 777 pub
for m in 666 644 4666 2666 2676 600; do echo x > pub/r$m; chmod $m pub/r$m; done
mkfifo -m 666 pub/fifo; mkfifo -m 644 pub/fifo-ro; ln -s r644 pub/sym
chown 1000 pub/r600
setpriv --reuid 1000 --regid 1000 --clear-groups sh -c '
for f in r666 r644 r4666 r2666 r2676 r600 fifo fifo-ro sym; do
  ln pub/$f pub/link-$f 2>/dev/null && echo "$f linked" || echo "$f refused"
done'
ls pub | wc -l
