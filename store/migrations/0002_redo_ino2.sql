-- 0002_redo_ino2: a second expected inode per redo op, for ops on two
-- objects (exchange).
ALTER TABLE redo ADD COLUMN ino2 INTEGER NOT NULL DEFAULT 0; -- uint64 stored bit for bit
