# errors and exit statuses of common commands on things that are not there or not the right kind
for cmd in 'cat missing' 'cat dir1' 'mkdir a.txt' 'rmdir dir1' 'rm dir1' 'ln -s x a.txt' 'ln dir1 dl' \
  'mv dir1 dir1/sub/in' 'cp dir1 dc' 'touch a.txt/x' 'ls nowhere-at-all' 'mv missing other' \
  'cd a.txt' 'cat dangling' 'mkdir dir1/nope/deeper' 'rm -r .' 'ln a.txt hard-a'; do
  out=$(sh -c "$cmd" 2>&1); echo "$? $cmd: ${out##*: }"
done
ls
