# tar of the fixture's kinds (hard and symbolic links, a FIFO, names with spaces, uid 1000's files),
# extraction with owners and modes, gzip, zip, and extraction of one member over a changed copy
# --mtime: the archive's bytes must not depend on when the case ran
tar cf all.tar --sort=name --mtime='2001-01-02 00:00:00 UTC' --exclude=all.tar --exclude=big.bin . 2>&1
tar tvf all.tar --numeric-owner | awk '{print $1, $2, $6, $7, $8}' | sort
mkdir out && tar xpf all.tar -C out && find out -printf '%y %m %P %l\n' | sort
stat -c '%n %h' out/a.txt out/hard-a
zip -qr -X d.zip dir1 && mkdir z && (cd z && unzip -q ../d.zip) && find z | sort && cat z/dir1/sub/d.txt
gzip -n all.tar && gzip -l all.tar.gz | tail -1 | awk '{print $2}'
echo changed > out/a.txt && tar xzf all.tar.gz -C out ./a.txt && cat out/a.txt out/hard-a
