# find -delete and find -exec over the tree
mkdir -p t/a/b/c t/x
for d in t t/a t/a/b t/a/b/c t/x; do echo 1 > $d/f.tmp; echo 2 > $d/keep; done
find t -name '*.tmp' -delete
find t | sort
find t -depth -name c -delete 2>&1 | sed 's/.*: //'
find t/a/b/c -delete 2>&1 || echo c-not-empty
find t/a -delete
find t | sort
find dir1 -type f -exec sh -c 'echo "$1" >> found' _ {} \;
sort found
find . -path ./fifo -prune -o -newer a.txt -type f -print | sort
find . -maxdepth 1 -type l -delete
ls
