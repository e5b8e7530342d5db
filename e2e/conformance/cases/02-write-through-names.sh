# writes through a symlink and a hard link reach the one file; a shorter overwrite truncates;
# a name replaced by rename no longer shares the inode
echo 'through the symlink' > link-to-a
cat a.txt hard-a
echo 'via hard link' > hard-a
cat link-to-a
stat -c '%n %s %h' a.txt hard-a
echo new > fresh && mv fresh hard-a
cat a.txt hard-a
stat -c '%n %h' a.txt hard-a
echo created > dangling
cat nowhere
readlink dangling
