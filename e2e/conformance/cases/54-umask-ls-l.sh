# umask, ls -l (modes, link counts, owners, sizes), stat of new and old objects
umask 077
touch u1 && mkdir u2 && mkfifo u3 && ln -s u1 u4
stat -c '%n %A %h %U %G %s' u1 u2 u3
umask 022
touch u5 && mkdir u6
python3 -c 'import os; fd = os.open("u7", os.O_CREAT | os.O_WRONLY, 0o777); os.close(fd); os.mkdir("u8", 0o777)'
stat -c '%n %a' u5 u6 u7 u8
umask 0
mkdir -m 1777 u9 && touch u10 && stat -c '%n %a' u9 u10
ls -l --time-style=+
ls -la --time-style=+ dir1 | tail -n +2
ls -i a.txt hard-a | awk '{print $1}' | uniq | wc -l
stat -c '%n %h %s %F' . dir1 dir1/sub empty
