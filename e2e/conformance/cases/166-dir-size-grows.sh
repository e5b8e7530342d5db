# a directory holding hundreds of entries is bigger than one block (ls -l, du), whether the
# transaction made it or it is a host directory; it does not shrink when they are removed
# (st_blocks is left out: natively it depends on how the blocks were allocated)
mkdir many
i=1; while [ $i -le 300 ]; do : > many/entry-with-a-longer-name-$i; i=$((i+1)); done
stat -c '%n %s' many
[ $(( $(stat -c %b many) * 512 )) -ge $(stat -c %s many) ] && echo blocks-cover-size
i=1; while [ $i -le 300 ]; do : > dir1/entry-with-a-longer-name-$i; i=$((i+1)); done
stat -c '%n %s' dir1
rm dir1/entry-with-a-longer-name-*
stat -c '%n %s' dir1 empty
python3 -c 'import os; print(os.stat("many").st_size, os.stat(os.open("dir1", os.O_RDONLY)).st_size)'
