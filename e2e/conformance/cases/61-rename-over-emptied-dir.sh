# rename a directory over a host directory whose entries were all removed in the transaction
rm dir1/c.txt dir1/sub/d.txt
rmdir dir1/sub
mkdir newd && echo n > newd/n
mv -T newd dir1 && ls -a dir1 && cat dir1/n
python3 -c '
import os
os.unlink("dir-ro/e.txt") if False else None
os.mkdir("x"); os.rename("x", "empty"); print(sorted(os.listdir(".")))'
find dir1 empty | sort
stat -c '%n %h' dir1 empty .
