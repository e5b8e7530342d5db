-- 0006_readset_data: file data and file metadata are separate granules
-- (DESIGN §4.6): a read set says which of them the transaction read.
-- Records stored before have data = 0 and meta = 1 where either was read,
-- which validation takes for a read of both: as strict as before.
ALTER TABLE readset ADD COLUMN data INTEGER NOT NULL DEFAULT 0; -- 1: the transaction read the object's contents
