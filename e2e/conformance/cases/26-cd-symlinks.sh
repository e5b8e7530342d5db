# cd through symlinks: logical and physical pwd, cd .. after a symlink,
# /proc/self/cwd of a child after cd
top=$(pwd)
ln -s dir1/sub s
cd s
pwd
pwd -P
/bin/pwd
readlink /proc/self/cwd
cat d.txt
cd ..
pwd
ls
cd "$top"
cd -P s
pwd
cd ..
pwd
ls | head -2
cd "$top/s/.."
pwd
cd -P "$top/s/.."
pwd
(cd -P "$top/s" && cd .. && /bin/pwd)
mkdir -p real/deep && ln -s real/deep ld && cd ld && cd -P .. && pwd && readlink /proc/self/cwd
