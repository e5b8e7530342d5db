# directory permission bits seen by a user: r without x (names listable, not statable), x
# without r (known names reachable, listing refused), w without x (nothing works), O_CREAT of
# an existing file in an unwritable dir, O_TRUNC without write permission, chdir refusals
mkdir rnox xnor wnox
for d in rnox xnor wnox; do echo in > $d/f; mkdir $d/sub; done
chmod 744 rnox; chmod 711 xnor; chmod 733 wnox; chmod 666 xnor/f rnox/f wnox/f
u() { setpriv --reuid 1000 --regid 1000 --clear-groups sh -c "$*" 2>&1 | sed 's/^[^:]*: //'; }
u 'ls rnox | sort | tr "\n" " "; echo'
u 'ls -l rnox 2>&1 | grep -c "?"'
u 'cat rnox/f'
u 'cd rnox'
u 'ls xnor'
u 'cat xnor/f && echo x > xnor/f && cat xnor/f'
u 'cd xnor/sub && pwd | sed "s|.*/||"'
u 'echo new > xnor/new'
u 'test -e xnor/f && echo exists; test -e xnor/nope || echo missing'
u 'ls wnox'
u 'echo z > wnox/z'
u 'rm wnox/f'
u 'echo a >> dir-ro/e.txt'
u 'python3 -c "import os; os.close(os.open(\"dir-ro/e.txt\", os.O_CREAT | os.O_RDONLY)); print(\"creat-existing-ro-dir ok\")"'
u 'python3 -c "import os; os.open(\"a.txt\", os.O_RDONLY | os.O_TRUNC)"' | tail -1
u 'python3 -c "import os; os.open(\"user.txt\", os.O_RDONLY | os.O_TRUNC); print(os.path.getsize(\"user.txt\"))"'
u 'find rnox xnor 2>&1 | sort'
u 'python3 -c "import os; print(sorted(os.listdir(\"rnox\"))); print([e.is_dir() for e in sorted(os.scandir(\"rnox\"), key=lambda e: e.name)])"' | tail -2
u 'python3 -c "import os; fd = os.open(\"xnor\", os.O_RDONLY)"' | tail -1
u 'python3 -c "import os; fd = os.open(\"xnor\", os.O_PATH); print(os.stat(\"f\", dir_fd=fd).st_size)"'
u 'mv xnor/f xnor/g'
u 'mkdir userdir/m && chmod 300 userdir/m && echo q > userdir/m/q && cat userdir/m/q && ls userdir/m'
u 'chmod 100 userdir/m && rm userdir/m/q'
u 'chmod 700 userdir/m && rm userdir/m/q && rmdir userdir/m && echo cleaned'
