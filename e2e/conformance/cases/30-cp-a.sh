# cp -a of trees with hard links, symlinks, modes, times, FIFOs
mkdir -p src/a/b
echo one > src/a/one; chmod 640 src/a/one
ln src/a/one src/a/b/one-link
ln -s ../one src/a/b/rel-link
ln -s /nonexistent src/abs-dangling
chmod 711 src/a/b
touch -d '2002-02-02 UTC' src/a/one src/a
mkfifo src/pipe
cp -a src dst
cp -a dir1 dir-ro . 2>&1 | head -1
cp -a dir1 dir1-copy
cp -a a.txt hard-a link-to-a exec.sh ro.txt dir1-copy/
find dst dir1-copy -printf '%p %y %m %n %l\n' | sort
stat -c '%n %Y' dst/a/one dst/a
echo two >> dst/a/one; cat dst/a/b/one-link src/a/one
cp -a dir-ro ro-copy && stat -c '%a' ro-copy && cat ro-copy/e.txt
cp -r --preserve=mode,timestamps big.bin big-copy && cmp big.bin big-copy && echo same
