# sqlite3: journal modes delete, truncate, persist, memory, off; wal checkpoint; attach; vacuum into
for m in delete truncate persist memory wal; do
  sqlite3 "j-$m.db" "pragma journal_mode=$m;" "create table t(a, b); insert into t values (1, randomblob(5000)), (2, randomblob(5000));" \
    "begin; update t set b = zeroblob(6000); delete from t where a = 1; commit;" "select count(*), sum(length(b)) from t;" | tail -1
done
ls j-*
sqlite3 j-wal.db 'pragma wal_checkpoint(truncate);' 'insert into t values (3, 3);' 'select count(*) from t;'
sqlite3 j-wal.db "attach 'j-delete.db' as o;" 'insert into o.t select * from main.t;' 'select count(*) from o.t;'
sqlite3 j-delete.db "vacuum into 'vac.db';" && sqlite3 vac.db 'pragma integrity_check; select count(*) from t;'
sqlite3 j-persist.db 'pragma page_size=1024; vacuum;' 'pragma page_size;' 'pragma integrity_check;'
ls -la --time-style=+ j-persist.db-journal | awk '{print $1, $NF}'
sqlite3 j-wal.db 'pragma journal_mode=delete;' && ls j-wal*
