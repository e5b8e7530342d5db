# hard links across directories: link counts, shared data, removal of one name
ln a.txt dir1/a-link
ln dir1/c.txt c-link
ln dir1/sub/d.txt dir1/d-link
stat -c '%n %h' a.txt hard-a dir1/a-link dir1/c.txt c-link
[ "$(stat -c %i a.txt)" = "$(stat -c %i dir1/a-link)" ] && echo same-inode
echo appended >> dir1/a-link
cat hard-a
rm a.txt
stat -c '%n %h' hard-a dir1/a-link
mv dir1/a-link empty/
stat -c '%n %h' empty/a-link
echo x > c-link; cat dir1/c.txt
chmod 600 c-link; stat -c '%n %a' dir1/c.txt
ln empty/a-link dir1/sub/third && stat -c '%h' hard-a
rm -r dir1
stat -c '%n %h' c-link hard-a
ln c-link c2 && ln c2 c3 && rm c-link && stat -c '%h' c3
ln dangling dang-hard && stat -c '%F %h' dang-hard dangling
ln -L link-to-a via-follow 2>&1; stat -c '%F %h' hard-a
python3 -c '
import os
os.link("c3", "c4"); os.unlink("c2")
print(os.stat("c4").st_nlink, os.stat("c3").st_nlink)
fd = os.open("c4", os.O_WRONLY | os.O_APPEND); os.write(fd, b"via fd\n"); print(os.fstat(fd).st_nlink); os.close(fd)
print(open("c3").read(), end="")'
ls
