# ".." of a removed directory is still its former parent (Linux keeps the dentry's parent):
# chdir("..") out of a removed current directory returns to where it was
mkdir -p d/e
cd d/e && rmdir ../e
cd -P .. && pwd | sed "s|.*/||" && ls -a && cat ../a.txt
echo made > from-parent.txt
