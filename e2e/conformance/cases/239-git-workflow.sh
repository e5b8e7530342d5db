# git: init, add/commit (deterministic dates), branches, gc, worktree add, clean -fdx,
# format-patch + am, apply, stash, checkout of files over modified ones
export GIT_AUTHOR_DATE=2001-01-01T00:00:00Z GIT_COMMITTER_DATE=2001-01-01T00:00:00Z HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1
g() { git -c user.name=u -c user.email=u@e -c init.defaultBranch=main -c advice.detachedHead=false "$@"; }
g init -q repo && cd repo
printf 'one\ntwo\nthree\n' > f; mkdir d; echo x > d/x; echo '*.o' > .gitignore
g add -A && g commit -q -m first && g rev-parse HEAD
g checkout -q -b feat && echo four >> f && g commit -q -am second && g rev-parse HEAD
g checkout -q main && g log --oneline --all | wc -l
g format-patch -q -1 feat -o ../patches && ls ../patches
g am -q ../patches/*.patch && g rev-parse HEAD && tail -1 f
echo five >> f && g diff > ../p.diff && g checkout -- f && g apply ../p.diff && tail -1 f
g stash -q && tail -1 f && g stash pop -q && tail -1 f
g checkout -q -- f
g gc -q --aggressive && g count-objects -v | grep -E '^(count|in-pack|packs)'
g fsck -q && echo fsck-ok
g worktree add -q ../wt feat && cat ../wt/f | wc -l && g worktree list | wc -l
echo junk > junk.o; mkdir untracked; echo u > untracked/u; echo ign > d/i.o
g clean -n -d | sort; g clean -fdx -q && g status --porcelain
g worktree remove ../wt && g worktree prune && g worktree list | wc -l
g branch -D -q feat && g branch
g tag v1 && g tag -l
ls -a | sort
rm -f .git/index
