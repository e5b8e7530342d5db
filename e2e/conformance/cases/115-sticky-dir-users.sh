# a /tmp-like sticky directory shared by two users and root: rename over, link to, replace,
# remove, chmod, mkdir in others' subdirectories
mkdir shared && chmod 1777 shared
u() { n=$1; shift; setpriv --reuid "$n" --regid "$n" --clear-groups sh -c "$*" 2>&1 | sed 's/^[^:]*: //'; }
u 1000 'echo a > shared/a-file; chmod 644 shared/a-file; mkdir shared/a-dir; echo x > shared/a-dir/x; chmod 777 shared/a-dir'
u 1001 'echo b > shared/b-file; chmod 666 shared/b-file'
u 1001 'mv shared/b-file shared/a-file'
u 1001 'ln shared/a-file shared/b-link'
u 1000 'ln shared/b-file shared/a-link && echo linked-writable'
u 1001 'echo over > shared/a-file'
u 1001 'rm -f shared/a-dir/x && echo rm-in-open-subdir'
u 1001 'rmdir shared/a-dir'
u 1001 'mv shared/a-dir shared/stolen'
u 1001 'mv shared/b-file shared/b-renamed && echo own-rename'
u 1001 'chmod 600 shared/a-file'
u 1000 'mv shared/b-renamed shared/mine'
u 1000 'echo overwrite > shared/b-renamed'
echo root > shared/root-file
u 1000 'rm -f shared/root-file'
u 1000 'mv shared/a-file shared/a-renamed && rm shared/a-renamed && echo owner-cleanup'
chmod 1770 shared && chgrp 1000 shared
u 1001 'ls shared'
ls -ln shared | awk 'NR>1 {print $1, $3, $NF}'
