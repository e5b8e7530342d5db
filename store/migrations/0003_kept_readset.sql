-- 0003_kept_readset: read sets, so that a kept transaction can be
-- validated against the host by another process later, and so that
-- txexec show can tell a create from a replace; and when a transaction
-- was kept.

-- readset is what a transaction observed of each host path it looked at:
-- the identity and attributes it saw, and a checksum of a listing it read.
-- Written with the commit (or with Keep), in the same SQL transaction.
CREATE TABLE readset (
	tx_id       INTEGER NOT NULL REFERENCES tx (id) ON DELETE CASCADE,
	path        TEXT    NOT NULL,
	present     INTEGER NOT NULL, -- 0: the transaction found the path absent
	dev         INTEGER NOT NULL, -- uint64 stored bit for bit
	ino         INTEGER NOT NULL, -- uint64 stored bit for bit
	type        INTEGER NOT NULL, -- S_IFMT bits
	meta        INTEGER NOT NULL, -- 1: the attributes below were observed
	mode        INTEGER NOT NULL,
	uid         INTEGER NOT NULL,
	gid         INTEGER NOT NULL,
	size        INTEGER NOT NULL,
	mtime_sec   INTEGER NOT NULL,
	mtime_nsec  INTEGER NOT NULL,
	ctime_sec   INTEGER NOT NULL,
	ctime_nsec  INTEGER NOT NULL,
	listing     INTEGER NOT NULL, -- 1: the transaction read the directory's listing
	listing_sum INTEGER NOT NULL, -- uint64 stored bit for bit
	PRIMARY KEY (tx_id, path)
) WITHOUT ROWID;

ALTER TABLE tx ADD COLUMN kept_ns INTEGER;
