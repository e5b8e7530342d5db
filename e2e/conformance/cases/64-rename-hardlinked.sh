# renames and removals among hard links: link counts, data shared after copy-up
ln b.txt b2
ln dir1/c.txt c2
mv b2 dir1/c.txt
stat -c '%n %h' b.txt dir1/c.txt c2
cat dir1/c.txt c2
echo more >> b.txt
cat dir1/c.txt
mv a.txt hard-a
stat -c '%n %h' hard-a
ls a.txt 2>&1
ln hard-a a.txt && echo x >> a.txt && cat hard-a && stat -c '%h' hard-a
rm hard-a && stat -c '%h' a.txt
mv dir1 d && cat d/c.txt && stat -c '%h' d/c.txt b.txt
