# swaps and rotations of files and directories through temporary names, then changes inside
mv a.txt tmp && mv b.txt a.txt && mv tmp b.txt
cat a.txt b.txt hard-a
mv dir1 t1 && mv empty dir1 && mv t1 empty
ls dir1 empty
mv exec.sh x1 && mv ro.txt exec.sh && mv 'sp ace.txt' ro.txt && mv x1 'sp ace.txt'
cat exec.sh ro.txt 'sp ace.txt'
echo changed >> empty/c.txt
mv empty/sub dir1/ && mv dir1 empty/sub/inner
echo deep > empty/sub/inner/deep.txt
find . -path ./fifo -prune -o -print | sort
stat -c '%n %a' a.txt b.txt exec.sh ro.txt
