# uid 1000 in the fixture: may write what it owns and 0666 files, not root's 0600 file nor into
# root's directories; may chmod its own files, not chown them; a file it makes is its own
u() { setpriv --reuid 1000 --regid 1000 --clear-groups sh -c "$1" 2>&1 | sed 's/^[^:]*: //'; }
u 'echo more >> user.txt && cat user.txt'
u 'cat b.txt'
u 'echo x > a.txt'
chmod 666 a.txt && u 'echo by-1000 > a.txt && cat hard-a'
u 'echo x > new-in-root-dir'
u 'mkdir userdir/mine && echo f > userdir/mine/f && stat -c "%n %u %g %a" userdir/mine userdir/mine/f'
u 'chmod 600 user.txt && stat -c "%n %a" user.txt'
u 'chown 0 user.txt'
u 'rm dir1/c.txt'
u 'ls dir-ro && echo x > dir-ro/new'
u 'mv userdir/mine userdir/renamed && ls userdir'
u 'umask 077; touch userdir/private && stat -c "%n %a" userdir/private'
stat -c '%n %u %a' a.txt user.txt
