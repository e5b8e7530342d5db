# coreutils corner cases: sed -i on a symlink and on a hard link, ln -f onto the same file,
# mv onto non-empty/empty dirs, mv -n, cp -r into itself, touch -h on a dangling link,
# truncate -s, cp --sparse, install -D, rm -d, readlink -f/-e/-m over chains
e() { "$@" 2>&1 | sed 's/^[^:]*: //'; }
e sed -i s/alpha/ALPHA/ link-to-a; test -L link-to-a && echo still-link || echo replaced-link; cat a.txt link-to-a
e sed -i --follow-symlinks s/ALPHA/aleph/ link-to-a 2>/dev/null
ls -l | awk '$NF ~ /link-to-a|a.txt|hard-a/ {print $1, $2, $NF}'
e ln -f a.txt hard-a; e ln a.txt hard-a
e ln -f a.txt a.txt
mkdir -p mv/full/x mv/empty mv/src/y
e mv mv/src mv/full/..//full; e mv -T mv/src mv/full; e mv -T mv/src mv/empty && ls mv
echo keep > k1; echo lose > k2; e mv -n k2 k1; cat k1 k2
# what cp copied before it met the copy depends on inode order: only its refusal is compared
e cp -r dir1 dir1/sub/inside; rm -rf dir1/sub/inside
e touch -h -d '2002-02-02 UTC' dangling; stat -c '%Y' dangling
e truncate -s 5 big.bin; e truncate -s +3 big.bin; stat -c %s big.bin
e truncate -s 2M sparse; e cp --sparse=always sparse sparse2; stat -c '%s %b' sparse2 | awk '{print $1, ($2 < 100)}'
e install -D -m 640 a.txt deep/er/x.txt; ls -ln deep/er | awk 'NR>1 {print $1, $NF}'
e rm -d empty; e rm -d dir1
ln -s dir1/sub c1; ln -s c1/d.txt c2; ln -s c2 c3
readlink -f c3 | sed "s|$PWD|T|"; readlink -e c3 | sed "s|$PWD|T|"; e readlink -e dangling; readlink -m dangling/x/.. | sed "s|$PWD|T|"
e realpath --relative-to=dir1/sub c3
e stat -c '%F %h' . dir1 mv mv/full c3 fifo
e cp -al dir1 dir1-al; stat -c %h dir1/c.txt
e mktemp -u XXXX | wc -c
e dd if=a.txt of=dd.out bs=2 count=1 status=none; cat dd.out; echo
e dd if=/dev/zero of=dd2 bs=1 count=0 seek=100 status=none; stat -c %s dd2
e split -b 300000 big.bin part-; ls part-* | wc -l; cat part-* | cmp - big.bin && echo split-ok
e shred -u -n 1 ro.txt; test -e ro.txt || echo shredded
e tac dir1/c.txt > tac.out && cat tac.out
