# hard links to symlinks (ln -P, linkat without AT_SYMLINK_FOLLOW) and through them (ln -L),
# link counts of symlinks, then the symlink's target changed by ln -sf over one name
ln -P link-to-a hl-sym; ln -L link-to-a hl-target; ln -P dangling hl-dangling
ln -L dangling hl-d2 2>&1 | sed 's/^ln: //'
stat -c '%n %F %h' link-to-a hl-sym hl-target hl-dangling a.txt
readlink hl-sym hl-dangling; cat hl-sym
ln -sf b.txt link-to-a; readlink hl-sym link-to-a; stat -c '%n %h' hl-sym
rm hl-sym; stat -c '%n %h' hl-dangling dangling a.txt
mv hl-dangling dir1/; readlink dir1/hl-dangling; stat -c '%n %h' dangling
touch -h -d '2005-01-01 00:00:00 UTC' dangling; stat -c '%n %Y' dir1/hl-dangling
