# many processes at once: xargs -P editing 200 files, parallel mkdir -p of shared parents,
# concurrent appends with O_APPEND, parallel renames into one directory
mkdir work
i=1; while [ $i -le 200 ]; do echo "value $i" > work/f$i; i=$((i+1)); done
ls work | xargs -P 8 -I{} sed -i 's/value/VALUE/' work/{}
grep -l VALUE work/* | wc -l
seq 1 40 | xargs -P 8 -I{} mkdir -p tree/a/b/c/{}/d
find tree -type d | wc -l
seq 1 100 | xargs -P 10 -I{} sh -c 'echo line{} >> shared.log'
wc -l < shared.log; sort -u shared.log -o shared.log; wc -l < shared.log
mkdir dest
ls work | xargs -P 8 -n 10 sh -c 'for f; do mv work/$f dest/$f.moved; done' _
ls work | wc -l; ls dest | wc -l
find dest -name '*.moved' -print0 | xargs -0 -P 4 -n 20 rm
rmdir dest work && echo removed
cat dir1/c.txt a.txt b.txt | xargs -n1 echo | sort
find . -maxdepth 1 -type f -name '*.txt' -print0 | sort -z | xargs -0 -n 2 echo | wc -l
