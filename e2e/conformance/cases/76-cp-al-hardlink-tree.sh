# cp -al: a tree of hard links to host files; edit through both names, in place and by replacement
cp -al dir1 d-links
stat -c '%n %h' dir1/c.txt d-links/c.txt d-links/sub/d.txt
echo appended >> d-links/c.txt
cat dir1/c.txt
sed -i 's/delta/DELTA/' d-links/sub/d.txt
cat dir1/sub/d.txt d-links/sub/d.txt
stat -c '%n %h' dir1/sub/d.txt d-links/sub/d.txt
cp -l a.txt al && stat -c %h a.txt
cp -s "$PWD/b.txt" bs && readlink bs | sed "s|$PWD|PWD|"
cp -r dir1 dir1-r && cp -rT dir1 dir1-r 2>&1; cp -r dir1 dir1-r && find dir1-r | sort
cp -au dir1/. empty/ && ls -a empty
echo newer > empty/c.txt && cp -u dir1/c.txt empty/ && cat empty/c.txt
cp -n a.txt b.txt 2>&1; cat b.txt
cp -f ro.txt a.txt && cat hard-a
cp --remove-destination b.txt a.txt && stat -c %h a.txt hard-a
cp --backup=numbered exec.sh b.txt && ls b.txt*
