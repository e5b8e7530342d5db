# mkdir -p of a deep path, mkdir -m, rmdir of what is not empty or not a directory, rm -r of a tree,
# root removing a read-only directory's entries, and the listings afterwards
mkdir -p deep/a/b/c/d/e && echo leaf > deep/a/b/c/d/e/f
mkdir -m 700 private && stat -c '%n %a' private
mkdir deep 2>&1 | sed 's/^.*: //'
rmdir deep 2>&1 | sed 's/^.*: //'
rmdir a.txt 2>&1 | sed 's/^.*: //'
rmdir empty && echo empty-gone
rm -r deep/a/b && find deep | sort
rm dir-ro/e.txt && rmdir dir-ro && echo dir-ro-gone
rm -r dir1
mkdir dir1 && ls -a dir1
rmdir -p x/y 2>&1 | sed 's/^.*: //'
ls -p
