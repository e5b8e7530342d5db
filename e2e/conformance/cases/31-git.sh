# git in the tree: init, add, commit, log, status, branch, checkout (HOME inside the tree)
export HOME="$PWD/home" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_DATE='2001-01-01T00:00:00Z' GIT_COMMITTER_DATE='2001-01-01T00:00:00Z'
mkdir home
git config --global user.name tester
git config --global user.email tester@example.com
git config --global init.defaultBranch main
git init -q repo
cd repo
echo hello > hello.txt
mkdir sub && echo nested > sub/n.txt
git add .
git commit -q -m first
echo more >> hello.txt
git status --short
git commit -q -am second
git log --format='%H %s'
git branch feature && git checkout -q feature
git rm -q sub/n.txt
echo feat > feat.txt && git add feat.txt && git commit -q -m third
git checkout -q main
ls
git log --all --oneline | wc -l
git gc -q 2>&1
git fsck --no-progress 2>&1 && echo fsck-ok
git cat-file -p HEAD:hello.txt
git ls-files -s
# The index caches inode numbers and change times, which differ between any two runs.
rm .git/index
