# mv of a tree across directories while a process has its cwd inside it
top=$(pwd)
mkdir -p t1/a/b dest
echo f > t1/a/b/f
cd t1/a/b
mv "$top/t1" "$top/dest/t2"
/bin/pwd
pwd -P
readlink /proc/self/cwd
cat f
echo new > g
cat "$top/dest/t2/a/b/g"
cd ..
ls
cd "$top"
(cd dir1/sub && mv ../../dir1 ../../dest/ && /bin/pwd && ls ..)
ls dest
rm -r dest/t2/a/b
(cd dest/t2/a && rmdir ../a && /bin/pwd 2>&1; ls -a 2>&1; echo x > y 2>&1; readlink /proc/self/cwd) 2>&1 | sed "s|$top|TOP|"
find dest | sort
