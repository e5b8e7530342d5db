# mkdir(2) ignores S_ISUID and S_ISGID in its mode argument (only S_ISVTX and the permission
# bits are used; set-group-ID comes from the parent directory alone)
python3 -c '
import os
os.umask(0)
os.mkdir("dsgid", 0o2777)
os.mkdir("dsuid", 0o4755)
os.mkdir("dall", 0o7777)
for p in ["dsgid", "dsuid", "dall"]:
    print(p, oct(os.stat(p).st_mode & 0o7777))'
