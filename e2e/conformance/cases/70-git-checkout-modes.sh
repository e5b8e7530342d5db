# git checkout switching files for directories, symlinks, executable bits; worktrees
export HOME="$PWD/home" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_DATE='2001-01-01T00:00:00Z' GIT_COMMITTER_DATE='2001-01-01T00:00:00Z'
mkdir home
git config --global user.name tester
git config --global user.email tester@example.com
git config --global init.defaultBranch main
git init -q r && cd r
echo file > thing; echo run > run.sh; ln -s thing lnk
git add -A && git commit -q -m files
git checkout -q -b b2
git rm -q thing && mkdir thing && echo inside > thing/f
chmod +x run.sh
rm lnk && echo notalink > lnk
git add -A && git commit -q -m dirs
ls -l | awk 'NR>1 {print $1, $NF}'
git checkout -q main
ls -l | awk 'NR>1 {print $1, $NF}'
cat thing
git checkout -q b2 && cat thing/f lnk
git worktree add -q ../wt main 2>&1
ls ../wt && cat ../wt/thing
git worktree remove ../wt && ls .. | grep -c wt
git gc -q --prune=now 2>&1 && git fsck --no-progress && echo fsck-ok
rm .git/index
