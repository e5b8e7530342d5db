# an unprivileged user works in its own directory: git, sqlite3, tar, sed -i, cp -a, mv, rm -r;
# and fails where it has no rights
as() { setpriv --reuid 1000 --regid 1000 --clear-groups env HOME=/nonexistent GIT_AUTHOR_DATE=2001-01-01T00:00:00Z GIT_COMMITTER_DATE=2001-01-01T00:00:00Z "$@" 2>&1; }
cd userdir
as sh -c 'umask 022; git init -q repo && cd repo && echo hi > f && git add f &&
  git -c user.name=u -c user.email=u@e commit -q -m one && git log --format=%s'
as sqlite3 db 'create table t(x); insert into t values (1),(2); select sum(x) from t;'
as sqlite3 wal.db 'pragma journal_mode=wal; create table t(x); insert into t values (3);' >/dev/null
as sqlite3 wal.db 'select * from t;'
as sh -c 'mkdir -p a/b && echo z > a/b/z && tar cf t.tar --mtime=2001-01-01 a && rm -r a && tar xf t.tar && cat a/b/z'
as sh -c 'sed -i s/z/Z/ a/b/z && cat a/b/z && cp -a a a2 && mv a2 a3 && rm -r a3 && ls'
as sh -c 'echo x > ../newfile' | sed 's/.*: //'
as sh -c 'rm -f ../a.txt' | sed 's/.*: //'
as sh -c 'mv a ../moved' | sed 's/.*: //'
as sh -c 'chmod 700 a && chmod 755 a && ln -s ../b.txt lb && cat lb' | sed 's/.*: //'
ls -ln | awk 'NR>1 {print $1, $3, $4, $NF}'
rm -f repo/.git/index
