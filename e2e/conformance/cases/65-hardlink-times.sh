# explicit times and modes on hard-linked host files after their data changed
echo changed >> a.txt
touch -d '2006-06-06 06:06:06 UTC' a.txt
chmod 604 hard-a
stat -c '%n %a %Y %h' a.txt hard-a
ln dir1/c.txt c-link
touch -d '2007-07-07 UTC' c-link
echo later >> dir1/c.txt
stat -c '%n %h %s' c-link
ln b.txt b-link
printf 'rewrite\n' > b.txt
touch -m -d '2008-08-08 UTC' b-link
touch -a -d '2009-09-09 UTC' b.txt
stat -c '%n %X %Y' b.txt b-link
