# sequences whose write-through order matters: names reused by other objects, moves out of
# directories that are then removed, a chain of renames through the same name
mv dir1 x && mkdir dir1 && mv x/sub dir1/sub && mv x/c.txt dir1/ && rmdir x
mv a.txt t && mv b.txt a.txt && mv t b.txt && mv a.txt t && mv ro.txt a.txt && mv t ro.txt
mkdir n1 && mv userdir n1/ && mv n1 userdir2 && mkdir userdir && mv userdir2/userdir userdir/inner && rmdir userdir2
echo fresh > empty/f && mv empty e && mv e/f . && rmdir e && mkdir empty && mv f empty/
ln exec.sh dir1/exec-link && rm exec.sh && mv dir1/exec-link exec.sh && ln exec.sh dir1/again
mv dir-ro dir-ro2 && mv dir-ro2/e.txt . && rmdir dir-ro2 && mkdir dir-ro && mv e.txt dir-ro/
mkdir -p q/r && mv q/r . && mv q r/ && mv r q
rm link-to-a && ln -s b.txt link-to-a && mv link-to-a l2 && ln -s a.txt link-to-a
find . -path ./fifo -prune -o -printf '%p %y %n\n' | sort
cat a.txt b.txt ro.txt exec.sh dir1/again dir-ro/e.txt empty/f hard-a
readlink l2 link-to-a
stat -c '%n %u %a' userdir userdir/inner dir-ro
