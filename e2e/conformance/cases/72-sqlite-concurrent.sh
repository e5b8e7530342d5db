# sqlite3: two processes on one WAL database (shm locks, busy timeout), and a rollback-journal one
sqlite3 c.db 'pragma journal_mode=wal; create table t(n integer);' >/dev/null
python3 - <<'PY'
import sqlite3, subprocess, os
a = sqlite3.connect("c.db", timeout=10)
a.execute("insert into t values (1)"); a.commit()
p = subprocess.run(["sqlite3", "-cmd", ".timeout 10000", "c.db", "insert into t values (2); select count(*) from t;"], capture_output=True, text=True)
print(p.stdout.strip(), p.returncode)
print(a.execute("select sum(n) from t").fetchone())
a.execute("begin immediate"); a.execute("insert into t values (3)")
p = subprocess.run(["sqlite3", "c.db", "insert into t values (4);"], capture_output=True, text=True)
print("locked:", "locked" in p.stderr, p.returncode)
a.commit()
print(a.execute("select group_concat(n) from t").fetchone())
a.execute("pragma wal_checkpoint(full)")
a.close()
b = sqlite3.connect("r.db", isolation_level=None)
b.execute("create table x(y)")
b.execute("begin"); b.executemany("insert into x values (?)", [(i,) for i in range(2000)])
p = subprocess.run(["sqlite3", "r.db", "select count(*) from x;"], capture_output=True, text=True)
print(p.stdout.strip(), os.path.exists("r.db-journal"))
b.execute("commit")
p = subprocess.run(["sqlite3", "r.db", "select count(*) from x;"], capture_output=True, text=True)
print(p.stdout.strip(), os.path.exists("r.db-journal"))
PY
ls
