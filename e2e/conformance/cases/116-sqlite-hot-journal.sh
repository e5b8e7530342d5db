# sqlite3 recovery inside the view: a writer killed mid-transaction leaves a hot rollback journal
# (or uncommitted WAL frames) that the next connection rolls back; EXCLUSIVE locking, mmap I/O
python3 - <<'PY'
import sqlite3, os
for mode in ["delete", "wal", "persist"]:
    db = f"hot-{mode}.db"
    c = sqlite3.connect(db, isolation_level=None)
    c.execute(f"pragma journal_mode={mode}")
    c.execute("create table t(x)"); c.execute("insert into t values (1)")
    c.close()
    pid = os.fork()
    if pid == 0:
        c = sqlite3.connect(db, isolation_level=None)
        c.execute("pragma cache_size=1")
        c.execute("begin")
        c.executemany("insert into t values (?)", [(i,) for i in range(5000)])
        c.execute("update t set x = x + 1")
        os._exit(0)
    os.waitpid(pid, 0)
    left = sorted(n for n in os.listdir(".") if n.startswith(db))
    c = sqlite3.connect(db)
    print(mode, c.execute("select count(*), sum(x) from t").fetchone(), c.execute("pragma integrity_check").fetchone()[0])
    c.close()
c = sqlite3.connect("ex.db", isolation_level=None)
c.execute("pragma locking_mode=exclusive"); c.execute("pragma mmap_size=1048576")
c.execute("create table t(x)")
c.executemany("insert into t values (?)", [(i,) for i in range(3000)])
print(c.execute("select sum(x) from t").fetchone())
c.close()
c = sqlite3.connect("ex.db"); print(c.execute("select count(*) from t").fetchone()); c.close()
PY
ls | grep -c '\.db'
