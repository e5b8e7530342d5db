# in-place editing tools: perl -i (with and without backup), sort -o onto its input, tee -a,
# sed -i through a symlink, split into pieces and reassemble
printf 'zulu\nalpha\nmike\n' > list.txt
perl -i -pe 's/alpha/ALPHA/' a.txt hard-a 2>&1
perl -i.bak -pe 'tr/a-z/A-Z/' b.txt
sort -o list.txt list.txt; cat list.txt
sort -r -o dir1/c.txt dir1/c.txt list.txt; cat dir1/c.txt
echo one | tee -a a.txt dir1/new.txt >/dev/null
echo two | tee -a a.txt > /dev/null
sed -i 's/charlie/C/' link-to-a 2>&1; ls -l link-to-a | cut -c1
sed -i --follow-symlinks 's/one/ONE/' link-to-a
split -b 300000 big.bin part.
ls part.*; cat part.* | cmp - big.bin && echo same
split -l 1 -d list.txt L; ls L*; cat L01
cat a.txt hard-a b.txt b.txt.bak dir1/new.txt link-to-a
stat -c '%h %A' a.txt hard-a b.txt b.txt.bak
