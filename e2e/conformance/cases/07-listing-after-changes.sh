# ls, find and python's scandir agree with the changes made before them: created, removed, renamed
# and replaced entries, a directory emptied then refilled
touch dir1/new1 dir1/new2
rm dir1/c.txt
mv dir1/new2 dir1/renamed
mkdir dir1/newdir
ln -s sub dir1/to-sub
ls -a dir1
ls -F dir1
find dir1 -printf '%y %p\n' | sort
rm -r dir1/sub && ls dir1
mkdir dir1/sub && touch dir1/sub/again && ls dir1/sub
python3 -c 'import os; print(sorted((e.name, e.is_dir(), e.is_symlink()) for e in os.scandir("dir1")))'
ls | wc -l
