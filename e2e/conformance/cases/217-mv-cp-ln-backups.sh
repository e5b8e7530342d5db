# mv -n, mv --backup=numbered, cp --backup=simple, ln --backup, mv -u, cp -n, install -b
mv -n a.txt b.txt; cat a.txt b.txt
mv --backup=numbered a.txt b.txt; mv --backup=numbered dir1/c.txt b.txt; ls b.txt*
cp --backup=simple --suffix=.orig ro.txt user.txt; ls user.txt*
ln --backup=t -s exec.sh user.txt; ls user.txt*; readlink user.txt
touch -d '1999-01-01' older; mv -u older dir1/sub/d.txt; ls older dir1/sub/d.txt 2>&1
cp -n big.bin dir1/sub/d.txt; cat dir1/sub/d.txt
install -b -m 600 exec.sh ro.txt; ls ro.txt*; stat -c '%n %a' ro.txt ro.txt~
cat b.txt b.txt.~1~ b.txt.~2~
