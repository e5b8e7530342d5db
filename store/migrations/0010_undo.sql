-- 0010_undo: before-images, for txexec undo (docs/semantics.md, "Undo").

-- undo says what the write-through keeps of what a transaction replaced
-- or removed: 'keep' (its before-images are in its undo areas), 'none'
-- (--undo=none, or stored before this step) or 'dropped' (kept, then
-- dropped by retention or txexec gc). undo_bytes is the space its
-- before-images held when its write-through ended. undoes is the
-- transaction a txexec undo transaction puts back, written with its
-- commit: from then on that one is undone.
ALTER TABLE tx ADD COLUMN undo TEXT NOT NULL DEFAULT 'none' CHECK (undo IN ('keep', 'none', 'dropped'));
ALTER TABLE tx ADD COLUMN undo_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tx ADD COLUMN undoes INTEGER REFERENCES tx (id);

CREATE INDEX tx_undoes ON tx (undoes);

-- undo_area is every undo area a transaction has outside the state
-- directory: a directory at the root of another mount, which holds hard
-- links to what the write-through replaced or removed on that mount. As a
-- staging area, a row is committed before its directory is made and
-- deleted once the directory is removed. The state directory's own
-- undo/ID needs no row.
CREATE TABLE undo_area (
	tx_id       INTEGER NOT NULL REFERENCES tx (id) ON DELETE CASCADE,
	path        TEXT    NOT NULL, -- MOUNTPOINT/.txexec-undo-INSTANCE-ID
	mount_point TEXT    NOT NULL,
	PRIMARY KEY (tx_id, path)
) WITHOUT ROWID;

-- setting holds the state directory's settings by name (undo retention:
-- undo_keep_last, undo_max_bytes); a name absent has its default.
CREATE TABLE setting (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

-- undo_records holds a transaction's before-image records (what each redo
-- op changed in place, and the after-state of every path it changed),
-- written with the mark that it is applied, so that they are durable with
-- it at no fsync of their own. Until then they are in undo/ID/records.
CREATE TABLE undo_records (
	tx_id INTEGER PRIMARY KEY REFERENCES tx (id) ON DELETE CASCADE,
	data  BLOB    NOT NULL -- JSON lines (txn's)
);
