# gzip/bzip2/xz/zstd replace files keeping mode, owner and times; patch with backups; zip/unzip
chmod 640 b.txt && chown 1000:1234 b.txt
gzip b.txt && stat -c '%n %a %u %g %Y' b.txt.gz && ls b.txt 2>&1 | sed 's/.*: //'
gunzip b.txt.gz && stat -c '%n %a %u %g %Y' b.txt && cat b.txt
bzip2 -k dir1/c.txt && xz dir1/sub/d.txt && zstd -q --rm ro.txt && ls dir1 dir1/sub ro*
stat -c '%n %a %Y' ro.txt.zst dir1/sub/d.txt.xz
unxz dir1/sub/d.txt.xz && zstd -dq --rm ro.txt.zst && cat dir1/sub/d.txt ro.txt && stat -c '%n %a %Y' ro.txt
gzip -c big.bin > big.gz && gzip -t big.gz && gzip -l big.gz | tail -1 | awk '{print $2}'
cp exec.sh exec.orig-src
printf '#!/bin/sh\necho patched "$@"\n' > exec.new
diff -u --label exec.sh --label exec.sh exec.sh exec.new > p.diff; patch -b exec.sh < p.diff && ./exec.sh x && cat exec.sh.orig && stat -c %a exec.sh
patch -R -b -V numbered exec.sh < p.diff && ls exec.sh* | sort
printf 'alpha\n' > x1; printf 'ALPHA\n' > x2; diff -u x1 x2 | sed '1,2d' > a.diff
patch a.txt < a.diff && cat hard-a && stat -c %h a.txt
zip -qr arch.zip dir1 a.txt && rm -r dir1 && unzip -q arch.zip && unzip -qo arch.zip && find dir1 | sort
unzip -l arch.zip | tail -1 | awk '{print $2}'; rm arch.zip
