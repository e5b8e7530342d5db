# bash: set -C noclobber (and >| override), here-docs into files, exec 3<>file read/write
# at offsets, process substitution writing to files, >> on a read-only file, <> creating
bash -c '
set -C
echo one > a.txt 2>/dev/null || echo noclobber-refused
echo two >| a.txt && cat a.txt
echo three > newfile && cat newfile
echo four > /dev/null && echo devnull-ok
echo five > fifo-out 2>/dev/null; cat fifo-out
ln -s nowhere2 dl; echo six > dl 2>/dev/null || echo noclobber-dangling-refused
set +C
cat > hd.txt <<HD
line $((1+1))
	tabbed
HD
cat <<-HD >> hd.txt
	stripped
	HD
cat hd.txt
exec 3<>rw.txt; echo abcdef >&3; exec 3>&-
exec 3<>rw.txt; read -n 2 x <&3; echo XY >&3; exec 3>&-; echo "read=$x"; cat rw.txt
exec 4<>b.txt; echo B >&4; exec 4>&-; cat b.txt
echo tee-data > >(cat > ps.txt); wait $!; cat ps.txt
diff <(sort dir1/c.txt) <(cat dir1/c.txt) && echo ps-diff-same
echo app >> ro.txt 2>/dev/null || echo ro-append-refused
{ echo g1; echo g2; } > grp.txt; wc -l < grp.txt
echo err 2> e1 1>&2; cat e1
exec 5>fd5.txt; echo via5 >&5; exec 5>&-; cat fd5.txt
: > truncated; echo x >> truncated; : > truncated; wc -c < truncated
echo nested > dir1/sub/../new.txt && cat dir1/new.txt
'
