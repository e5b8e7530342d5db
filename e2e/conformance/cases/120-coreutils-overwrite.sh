# coreutils overwrite modes: cp -r over existing trees, cp -rT, mv -T/-n/-b/-u, mv dir over
# non-empty dir, install -b/-C/-S, ln -r, ln -T, truncate -r, touch -c, split/cat round trip
mkdir -p t/dir1/sub && echo old > t/dir1/c.txt && echo keep > t/dir1/only-old
cp -r dir1 t/ && cat t/dir1/c.txt t/dir1/only-old && ls t/dir1/sub
cp -rT dir1 t/dir1-T && ls t/dir1-T
mkdir -p m1/x && mv -T dir1 m1 2>&1 | sed 's/.*: //'
rm -r m1/x && mv -T dir1 m1 && ls m1
mv -n a.txt b.txt && cat b.txt
mv -b ro.txt b.txt && ls b.txt* && cat b.txt~
mv -u exec.sh 'sp ace.txt' && ls exec.sh 2>&1 | sed 's/.*: //'
mkdir -p e1/f && mv e1 empty 2>&1 | sed 's/.*: //'; ls empty
install -b -m 600 a.txt user.txt && ls user.txt* && stat -c '%a %U' user.txt user.txt~
install -C -m 600 a.txt user.txt && install -S .bak hard-a user.txt && ls user.txt*
mkdir -p deep/er && ln -r -s b.txt deep/er/rel && readlink deep/er/rel && cat deep/er/rel
ln -T a.txt deep 2>&1 | sed 's/.*: //'
truncate -r big.bin a.txt && stat -c %s a.txt hard-a
touch -c nonexistent && ls nonexistent 2>&1 | sed 's/.*: //'
split -b 100000 big.bin part. && ls part.* | wc -l && cat part.* | cmp - big.bin && echo joined
rm part.*
