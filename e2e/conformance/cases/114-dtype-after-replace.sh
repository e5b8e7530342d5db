# d_type in listings after entries change type (file -> dir, dir -> symlink, link -> fifo) and
# after renames and exchanges; find -type relies on it
rm a.txt && mkdir a.txt
rm -r dir1 && ln -s empty dir1
rm link-to-a && mkfifo link-to-a
rmdir empty && echo f > empty
mv fifo ex && mv b.txt fifo && mv ex b.txt
python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.renameat2(-100, b"userdir", -100, b"ro.txt", 2)
for e in sorted(os.scandir("."), key=lambda e: e.name):
    print(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False), e.is_symlink())'
find . -maxdepth 1 -type d | sort
find . -maxdepth 1 -type p | sort
find . -maxdepth 1 -type l | sort
ls -F | sort
