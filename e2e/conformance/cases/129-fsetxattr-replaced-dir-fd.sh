# fsetxattr and fchmod through a descriptor on a host directory that a rename replaced: the
# directory is gone, the one renamed in its place keeps its own mode and attributes
mkdir -m 751 e2
python3 -c '
import os
d = os.open("empty", os.O_RDONLY)
os.rename("e2", "empty")
os.setxattr(d, "user.x", b"1")
os.fchmod(d, 0o700)
print(oct(os.stat(d).st_mode & 0o777), os.listxattr("empty"))'
stat -c '%n %a' empty
