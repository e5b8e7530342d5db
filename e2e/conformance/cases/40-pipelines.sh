# pipelines between processes of the transaction, reading and writing files
cat big.bin | sha256sum | cut -c1-16
yes line | head -n 20000 | tee many-lines | wc -l
sort -r dir1/c.txt a.txt b.txt | uniq -c | sed 's/^ *//'
find dir1 -type f | sort | xargs cat
printf '%s\n' 3 1 2 | sort -n > sorted; cat sorted
ls | grep -v many | tr a-z A-Z | head -5
cat a.txt | (read x; echo "got $x") > sub-out; cat sub-out
seq 1 50000 | gzip -c > nums.gz && gzip -dc nums.gz | tail -1
tar cf - dir1 | (mkdir untarred && cd untarred && tar xf -) && find untarred | sort
head -c 100000 /dev/zero | od -An -c | head -2
