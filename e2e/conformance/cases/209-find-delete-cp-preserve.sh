# find -delete (depth-first, with -name filters and in made dirs), cp -r --preserve=all of a
# tree with links, modes, owners and times, then cp -a of the copy
mkdir -p made/x/y; touch made/x/y/f.o made/x/g.o made/keep.c
find made -name '*.o' -delete; find made | sort
find dir1 -depth -delete; ls -d dir1 2>&1
cp -r --preserve=all dir-ro userdir link-to-a hard-a user.txt ro.txt fifo copy-dst 2>&1
mkdir copy-dst; cp -r --preserve=all dir-ro userdir link-to-a hard-a user.txt ro.txt copy-dst
cp -a copy-dst copy2
find copy-dst copy2 -printf '%p %y %m %u %TY-%Tm-%Td\n' | sort
find . -maxdepth 1 -name 'copy*' -newer a.txt | sort
find empty -delete; find . -maxdepth 1 -type d | sort
