# in-place editing replaces the file by rename: sed -i and perl -pi split a hard link and replace
# a symlink by a file (or follow it with --follow-symlinks); the mode is kept
sed -i 's/alpha/ALPHA/' a.txt && cat a.txt hard-a && stat -c '%n %h' a.txt hard-a
sed -i 's/bravo/BRAVO/' b.txt && stat -c '%n %a %s' b.txt
sed -i --follow-symlinks 's/ALPHA/via-link/' link-to-a && cat a.txt && stat -c '%F' link-to-a
sed -i 's/via/replaced/' link-to-a && stat -c '%F' link-to-a && cat link-to-a a.txt
perl -pi -e 's/charlie/CHARLIE/' dir1/c.txt && cat dir1/c.txt
perl -pi.bak -e 's/delta/DELTA/' dir1/sub/d.txt && cat dir1/sub/d.txt dir1/sub/d.txt.bak
sed -i '1i first' user.txt && stat -c '%n %u %g' user.txt && cat user.txt
