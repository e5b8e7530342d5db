# fallocate (keep size, punch hole, collapse) and truncate grow/shrink while a descriptor is open
fallocate -l 8192 alloc.bin; stat -c '%s' alloc.bin
fallocate -n -o 0 -l 65536 a.txt; stat -c '%s' a.txt; cat a.txt
cp big.bin holes.bin
fallocate -p -o 4096 -l 8192 holes.bin; stat -c '%s' holes.bin; od -An -c -j 4090 -N 12 holes.bin
fallocate -c -o 0 -l 4096 big.bin 2>/dev/null; echo "collapse $?"; stat -c '%s' big.bin
exec 8<>b.txt
truncate -s 2 b.txt; cat <&8; echo; stat -c '%s' b.txt
exec 8<&-
exec 7<>dir1/c.txt
truncate -s 20 dir1/c.txt; od -An -c dir1/c.txt
truncate -s -4 dir1/c.txt; stat -c '%s' dir1/c.txt
printf 'Z' >&7
exec 7>&-
od -An -c dir1/c.txt
truncate -s +1k dir1/sub/d.txt; stat -c '%s' dir1/sub/d.txt
truncate -s 10 -c nothere; ls nothere 2>&1; stat -c '%s' big.bin
