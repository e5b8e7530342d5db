# git: merge with a conflict resolved by hand, rebase, cherry-pick, git mv of a directory,
# rm --cached, stash -u, exec bit and symlink changes, clean -X, reflog-free deterministic hashes
export GIT_AUTHOR_DATE=2001-01-01T00:00:00Z GIT_COMMITTER_DATE=2001-01-01T00:00:00Z HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1
g() { git -c user.name=u -c user.email=u@e -c init.defaultBranch=main -c core.fileMode=true "$@"; }
g init -q r && cd r
mkdir -p src/lib; printf 'a\nb\nc\n' > src/f; echo lib > src/lib/l; ln -s f src/link; echo '*.tmp' > .gitignore
g add -A && g commit -q -m base
g checkout -q -b side; printf 'a\nB-side\nc\n' > src/f; g commit -q -am side; g rev-parse --short HEAD
g checkout -q main; printf 'a\nB-main\nc\n' > src/f; chmod +x src/lib/l; g commit -q -am main; g rev-parse --short HEAD
g merge -q side 2>/dev/null; echo merge=$?; g status --porcelain
printf 'a\nB-both\nc\n' > src/f; g add src/f && g commit -q --no-edit && g rev-parse --short HEAD
g checkout -q -b topic HEAD~1; echo t > t1; g add t1; g commit -q -m t1; echo t2 > t2; g add t2; g commit -q -m t2
g rebase -q main && g log --format=%s | tr '\n' ' '; echo
g checkout -q main; g cherry-pick topic >/dev/null && g rev-parse --short HEAD
g mv src source && g commit -q -m mv && ls source source/lib
rm source/link; ln -s lib source/link; g commit -q -am relink && readlink source/link
g rm -q --cached t2 && g commit -q -m untrack && g status --porcelain
echo junk > x.tmp; echo un > untracked
g stash -q -u && ls; g stash pop -q && ls
g clean -X -f -q; ls
g log --format='%h %s' | head -3
g ls-files -s source/lib/l | cut -c1-6
rm -f .git/index
