-- 0007_read_count: a committed transaction's read set is kept only for
-- the paths its redo operations name, which is what `txexec show` reads
-- (whether a path it changed existed before). The rest served validation
-- at the commit point and nothing after it; writing every record cost
-- about as much as the lookup that made it (BenchmarkCommitReads).
-- read_n keeps the size of the whole read set for `txexec log`; NULL for
-- transactions stored before, whose readset rows are all there.
ALTER TABLE tx ADD COLUMN read_n INTEGER;
