-- 0006_granules: file data and file metadata are separate granules
-- (docs/semantics.md §3): a read set says which of them the transaction read.
-- Records stored before have data = 0 and meta = 1 where either was read,
-- which validation takes for a read of both: as strict as before.
ALTER TABLE readset ADD COLUMN data INTEGER NOT NULL DEFAULT 0; -- 1: the transaction read the object's contents

-- What the object a granule names has once the write-through is done (0
-- when unknown): a transaction that read it, and that another transaction
-- changed meanwhile without conflict, is validated against the host with
-- these besides what it saw itself.
ALTER TABLE granule ADD COLUMN ino INTEGER NOT NULL DEFAULT 0; -- uint64 stored bit for bit
ALTER TABLE granule ADD COLUMN mtime_sec INTEGER NOT NULL DEFAULT 0;
ALTER TABLE granule ADD COLUMN mtime_nsec INTEGER NOT NULL DEFAULT 0;
