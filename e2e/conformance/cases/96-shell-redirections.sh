# shell redirections: <>, >|, >>, here-documents (bash temp files), /dev/fd and /dev/stdin reopen
exec 3<>rw.txt
echo first >&3
cat /dev/fd/3; cat rw.txt
exec 3>&-
exec 4<a.txt; cat /dev/fd/4 /proc/self/fd/4; exec 4<&-
cat /dev/stdin < b.txt
echo over >| a.txt; cat hard-a
{ echo one; echo two >&2; } > out.txt 2>err.txt; cat out.txt err.txt
echo appended >> /dev/fd/1 > log.txt; cat log.txt
bash -c 'cat <<END > hd.txt
here $((1+2))
END
cat hd.txt; cat <<< "herestring"; read -r x < <(echo procsub); echo $x'
bash -c 'exec 5>fd5.txt; echo via5 >&5; readlink /proc/self/fd/5 | sed "s|.*/||"'
cat fd5.txt
sh -c 'exec >redir-all.txt 2>&1; echo o; ls nonexist'
sed 's/nonexist.*/X/' redir-all.txt
python3 -c '
import os, sys
fd = os.open("dir1/c.txt", os.O_RDONLY)
print(open(f"/dev/fd/{fd}", "a") is not None)
os.close(fd)'
cat dir1/c.txt
