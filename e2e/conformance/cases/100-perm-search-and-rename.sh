# unprivileged: search without read and read without search, rename of a directory to another
# parent needs write on the directory itself, explicit times need ownership, unlink needs w+x
as() { setpriv --reuid 1000 --regid 1000 --clear-groups "$@" 2>&1; }
mkdir -p xonly/inner ronly/inner wonly pub
echo secret > xonly/inner/f; echo r > ronly/f; echo w > wonly/f
chmod 711 xonly; chmod 744 ronly; chmod 733 wonly; chmod 777 pub
as ls xonly; as cat xonly/inner/f
as ls ronly | sort; as cat ronly/f; as stat -c %s ronly/f
as rm -f wonly/f; as sh -c 'echo new > wonly/g'; ls wonly
chmod 722 wonly; as rm -f wonly/f; as sh -c 'echo new > wonly/h'; ls wonly
mkdir pub/rootdir pub/dest; chmod 755 pub/rootdir; chmod 777 pub/dest
as mv pub/rootdir pub/dest/ | sed 's/.*: //'
as mv pub/rootdir pub/renamed-same-parent && ls pub
as mkdir pub/mine && as mv pub/mine pub/dest/ && ls pub/dest
echo x > pub/rootfile && chmod 666 pub/rootfile
as touch pub/rootfile && echo touch-now-ok
as touch -d '2001-01-02 UTC' pub/rootfile | sed 's/.*: //'
as touch -m -d '2001-01-02 UTC' user.txt && stat -c %Y user.txt
as /usr/bin/python3 -c 'import os; os.utime("pub/rootfile", None); print("utime-none-ok")'
as ln pub/rootfile pub/hl | sed 's/.*: //'
as ln -s /etc/passwd pub/sl && as /usr/bin/python3 -c "import os; os.chmod(\"pub/sl\", 0o600, follow_symlinks=False)" 2>&1 | tail -1
as mkfifo ronly/ff | sed 's/.*: //'
as sh -c 'umask 027; mkdir -p pub/u/v/w; touch pub/u/v/w/f'
stat -c '%n %a %u' pub/u pub/u/v pub/u/v/w pub/u/v/w/f
as chmod 777 pub/rootfile | sed 's/.*: //'
as truncate -s 0 dir1/c.txt | sed 's/.*: //'
as sh -c ': > pub/rootfile' && stat -c %s pub/rootfile
