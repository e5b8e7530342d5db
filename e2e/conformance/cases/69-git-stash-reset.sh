# git: stash, reset --hard, clean -fdx, mv, tag, branch -d, merge, rebase, reflog
export HOME="$PWD/home" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_DATE='2001-01-01T00:00:00Z' GIT_COMMITTER_DATE='2001-01-01T00:00:00Z'
mkdir home
git config --global user.name tester
git config --global user.email tester@example.com
git config --global init.defaultBranch main
git init -q r && cd r
printf 'one\ntwo\nthree\n' > f.txt; mkdir d; echo x > d/x
git add -A && git commit -q -m c1
echo four >> f.txt; echo untracked > u.txt
git stash -q
git status --short
cat f.txt
git stash pop -q && git status --short
git stash -q -u && ls && git stash list | wc -l
git stash apply -q && git stash drop -q && ls
git add f.txt && git commit -q -m c2
git mv d e && git commit -q -m c3 && ls
git tag v1 && git tag -l
git checkout -q -b side HEAD~1 && ls && echo side > s.txt && git add s.txt && git commit -q -m side
git checkout -q main && git merge -q --no-edit side 2>&1 && ls
git branch -d side && git branch
git reset -q --hard v1 && ls
mkdir junk && touch junk/j ignored.o && git clean -fdxq && ls
git rebase -q --onto HEAD~2 HEAD~1 2>&1; git log --format=%s | tr '\n' ' '; echo
git reflog | wc -l
git fsck --no-progress 2>&1 && echo fsck-ok
git count-objects -v | grep -E '^(count|in-pack|garbage)'
rm .git/index
