# hard-linked host files changed after one of their directories was renamed or removed
ln dir1/c.txt c-outer
mv dir1 moved
echo via-outer >> c-outer
cat moved/c.txt
stat -c '%h' moved/c.txt
ln moved/sub/d.txt d-outer
rm -r moved/sub
echo after-rm >> d-outer
stat -c '%h' d-outer
cat d-outer
mv hard-a dir-ro/ 2>&1
echo via-a >> a.txt
mv a.txt empty/a-moved
cat dir-ro/hard-a empty/a-moved
stat -c '%h' dir-ro/hard-a
