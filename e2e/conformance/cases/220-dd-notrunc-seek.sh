# dd into existing files: conv=notrunc with seek, oflag=append, seek past the end (a hole),
# count/skip from a host file, and dd of=same file as if= (overlapping in-place copy)
printf 'XYZ' | dd of=a.txt bs=1 seek=2 conv=notrunc status=none; cat a.txt
printf 'tail\n' | dd of=b.txt oflag=append conv=notrunc status=none; cat b.txt
printf 'far' | dd of=dir1/c.txt bs=1 seek=20 status=none; od -An -c dir1/c.txt
dd if=big.bin of=piece bs=4 skip=3 count=2 status=none; cat piece; echo
dd if=big.bin of=big.bin bs=9 skip=1 count=3 conv=notrunc status=none; head -c 30 big.bin; echo
dd if=/dev/zero of=ro.txt count=1 status=none 2>&1 | sed 's/^dd: //'
stat -c '%n %s' a.txt b.txt dir1/c.txt big.bin
