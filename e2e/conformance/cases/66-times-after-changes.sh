# explicit times survive later metadata changes; content changes reset mtime
touch -d '2005-05-05 UTC' a.txt && chmod 640 a.txt && chown 1000 a.txt
stat -c '%n %a %u %Y' a.txt
touch -d '2005-05-05 UTC' ro.txt && echo x >> ro.txt
[ "$(stat -c %Y ro.txt)" -gt 1577836800 ] && echo ro-mtime-now
touch -d '2004-04-04 UTC' newfile && mv newfile dir1/moved && stat -c '%Y' dir1/moved
touch -d '2003-03-03 UTC' dir1/c.txt && ln dir1/c.txt lnk && stat -c '%Y %h' dir1/c.txt
touch -d '2002-02-02 UTC' exec.sh && cp -p exec.sh exec2 && stat -c '%Y' exec2
mkdir nd && touch -d '2001-02-03 UTC' nd && stat -c %Y nd
touch -d '2002-03-04 UTC' nd/f && stat -c %Y nd/f
python3 -c '
import os
os.utime("b.txt", ns=(10**9, 2*10**9))
fd = os.open("b.txt", os.O_WRONLY)
os.close(fd)
print(os.stat("b.txt").st_mtime_ns)
fd = os.open("sp ace.txt", os.O_WRONLY | os.O_TRUNC)
os.close(fd)
print(os.stat("sp ace.txt").st_mtime > 1577836800, os.stat("sp ace.txt").st_size)'
