# git clone of a local repository (objects hard-linked), commits in both, gc, status after touch
export HOME="$PWD/home" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_DATE='2001-01-01T00:00:00Z' GIT_COMMITTER_DATE='2001-01-01T00:00:00Z'
mkdir home
git config --global user.name tester
git config --global user.email tester@example.com
git config --global init.defaultBranch main
git init -q origin && cd origin
for i in 1 2 3 4 5 6 7 8 9 10; do echo "file $i" > f$i; done
git add . && git commit -q -m base
cd ..
git clone -q origin clone 2>&1
find clone/.git/objects -type f -links +1 | wc -l
cd clone && echo change >> f1 && git commit -q -am change && cd ..
cd origin && git rm -q f2 && git commit -q -m rm-f2 && git gc -q --prune=now && cd ..
git -C clone pull -q --no-rebase --no-edit 2>&1
ls clone | tr '\n' ' '; echo
git -C clone log --format=%s | tr '\n' ' '; echo
touch origin/f3 && git -C origin status --short && echo clean
echo dirty > origin/f4 && git -C origin status --short
git -C origin stash -q && git -C origin status --short && cat origin/f4
git clone -q --no-hardlinks origin clone2 && ls clone2 | wc -l
git clone -q --bare origin bare.git && git -C bare.git log --oneline | wc -l
git -C clone push -q ../bare.git main 2>&1
git -C bare.git log --format=%s | tr '\n' ' '; echo
git -C clone fsck --no-progress && git -C origin fsck --no-progress && echo fsck-ok
rm origin/.git/index clone/.git/index clone2/.git/index
