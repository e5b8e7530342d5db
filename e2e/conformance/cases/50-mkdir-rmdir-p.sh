# mkdir -p with existing parts and through symlinks; rmdir -p
mkdir -p dir1/sub/new/deeper
mkdir -p dir1/sub && echo existing-ok
mkdir -p a.txt/x 2>&1
mkdir -p link-to-a/x 2>&1
ln -s dir1 ld && mkdir -p ld/sub/via-link && ls dir1/sub
mkdir -p -m 700 m1/m2/m3 && stat -c '%n %a' m1 m1/m2 m1/m2/m3
mkdir -p dangling/x 2>&1
mkdir -p ./././dir1/../p2/./q && ls -d p2/q
rmdir -p m1/m2/m3 && ls -d m1 2>&1
mkdir -p r1/r2/r3 && touch r1/keep
rmdir -p r1/r2/r3 2>&1
ls r1
rmdir -p dir1/sub/new/deeper 2>&1
ls dir1/sub
rmdir dir1/sub/via-link/ 2>&1 && echo slash-ok
rmdir ld/sub 2>&1
rmdir ld 2>&1
rmdir . 2>&1
rmdir empty/. 2>&1
rmdir empty/.. 2>&1
mkdir empty/. 2>&1
mkdir "$(pwd)/empty/new/" && ls empty
ls
