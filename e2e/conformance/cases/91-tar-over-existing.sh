# tar x over an existing tree: files replaced, symlinks and directories swapped,
# hard links, restrictive directory modes and times applied after the contents
mkdir -p src/dir1/sub src/new/ro
printf 'from tar\n' > src/dir1/c.txt
ln -s c.txt src/dir1/sub          # a symlink where a host directory is
mkdir src/a.txt                   # a directory where a host file is
printf 'in a dir\n' > src/a.txt/inside
printf 'ro\n' > src/new/ro/f && chmod 500 src/new/ro
ln src/dir1/c.txt src/new/hl
ln -s ../nowhere src/new/dangl
touch -d '2003-03-03 UTC' src/new/ro/f src/new/ro src/dir1/c.txt
mkfifo src/new/pipe
(cd src && tar cf ../t.tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2004-04-04 UTC' dir1 a.txt new) 
tar xf t.tar 2>&1; echo rc=$?
tar xf t.tar --overwrite 2>&1; echo rc=$?
tar xf t.tar --recursive-unlink 2>&1; echo rc=$?
find dir1 a.txt new -printf '%p %y %m %n %l %TY\n' 2>&1 | sort
cat hard-a dir1/c.txt new/hl
tar xf t.tar -k 2>&1 | head -3; echo rc=$?
tar xpf t.tar --same-owner -C empty && find empty -printf '%p %y %m %u %TY\n' | sort
tar cf - dir1 | tar xf - -C userdir && ls userdir
tar --delete -f t.tar new/pipe && tar tf t.tar | sort
