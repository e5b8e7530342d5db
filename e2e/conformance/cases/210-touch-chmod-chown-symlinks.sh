# utimensat on symlinks (touch -h) vs on their targets, chmod -R and chown -R/-h over symlinks
# (-H, -L, -P), times compared relative to each other
ln -s dir1 ldir
touch -h -d '2010-05-05 00:00:00 UTC' link-to-a dangling ldir
stat -c '%n %Y' link-to-a dangling ldir a.txt dir1
touch -d '2012-01-01 00:00:00 UTC' link-to-a; stat -c '%n %Y' link-to-a a.txt hard-a
touch -h -m -d '2013-01-01 00:00:00 UTC' ldir; stat -c '%n %X %Y' ldir
touch dangling 2>&1; stat -c '%n %F' dangling nowhere 2>&1
chmod -R g+w ldir; stat -c '%n %a' dir1 dir1/c.txt dir1/sub
chmod -R o-r dir1; stat -c '%n %a' dir1 dir1/c.txt dir1/sub/d.txt
chown -h 1000 link-to-a; stat -c '%n %u' link-to-a a.txt
chown -R 1000:1000 ldir; stat -c '%n %u' ldir dir1
chown -R -H 1000 ldir; stat -c '%n %u' ldir dir1 dir1/sub/d.txt
ln -s ../b.txt dir1/sub/lb
chown -R -L 1000 dir1; stat -c '%n %u' b.txt dir1/sub/lb
chown -R -P 2000 dir1; stat -c '%n %u' b.txt dir1/sub/lb dir1/sub/d.txt
chmod 700 link-to-a; stat -c '%n %a' a.txt link-to-a
chmod -h 700 link-to-a 2>&1 | sed 's/.*: //'; stat -c '%n %a' link-to-a
