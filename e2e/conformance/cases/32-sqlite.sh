# sqlite3: rollback journal and WAL databases (fcntl locks, journal files, shm mmap)
sqlite3 db.sqlite 'create table t(k integer primary key, v text); insert into t(v) values ("a"),("b"),("c");'
sqlite3 db.sqlite 'select count(*), group_concat(v) from t;'
sqlite3 db.sqlite 'begin; update t set v = upper(v); delete from t where k = 2; commit; select * from t;'
sqlite3 db.sqlite 'begin; insert into t(v) values ("x"); rollback; select count(*) from t;'
ls db.sqlite*
sqlite3 wal.sqlite 'pragma journal_mode=wal; create table w(x); insert into w values (1),(2),(3);'
sqlite3 wal.sqlite 'select sum(x) from w; pragma integrity_check;'
ls wal.sqlite*
python3 - <<'PY'
import sqlite3
c = sqlite3.connect("py.sqlite")
c.execute("create table p(n)")
c.executemany("insert into p values (?)", [(i,) for i in range(1000)])
c.commit()
print(c.execute("select sum(n) from p").fetchone()[0])
c.close()
PY
sqlite3 py.sqlite 'vacuum; select count(*) from p;'
