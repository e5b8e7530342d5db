-- 0001_init: transactions, their redo records and write sets, the commit counter.

-- tx is one transaction from begin to its end (applied or aborted).
-- Times are Unix nanoseconds; NULL when the event has not happened.
CREATE TABLE tx (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	state          TEXT    NOT NULL CHECK (state IN ('running', 'kept', 'committed', 'applied', 'aborted')),
	command        TEXT    NOT NULL, -- JSON array of strings
	cwd            TEXT    NOT NULL,
	owner_pid      INTEGER NOT NULL, -- the supervisor responsible for it now
	owner_start    INTEGER NOT NULL, -- its start time, to tell pid reuse apart
	start_seq      INTEGER NOT NULL, -- highest commit seq when it began
	seq            INTEGER UNIQUE,   -- its commit seq, once committed
	reason         TEXT    NOT NULL DEFAULT '',
	command_status INTEGER,
	begin_ns       INTEGER NOT NULL,
	commit_ns      INTEGER,
	applied_ns     INTEGER,
	aborted_ns     INTEGER
);

CREATE INDEX tx_state ON tx (state);

-- redo holds a committed transaction's write-through, one ordered row per
-- operation. Only paths and attributes: bulk data stays in staged files.
CREATE TABLE redo (
	tx_id      INTEGER NOT NULL REFERENCES tx (id) ON DELETE CASCADE,
	n          INTEGER NOT NULL, -- position in the list, from 0
	kind       TEXT    NOT NULL,
	path       TEXT    NOT NULL,
	src        TEXT    NOT NULL,
	ino        INTEGER NOT NULL, -- uint64 stored bit for bit
	attrs      INTEGER NOT NULL, -- which of the fields below are set
	mode       INTEGER NOT NULL,
	uid        INTEGER NOT NULL,
	gid        INTEGER NOT NULL,
	atime_sec  INTEGER NOT NULL,
	atime_nsec INTEGER NOT NULL,
	mtime_sec  INTEGER NOT NULL,
	mtime_nsec INTEGER NOT NULL,
	PRIMARY KEY (tx_id, n)
) WITHOUT ROWID;

-- granule is a committed transaction's write set, for validating later
-- committers. Kinds belong to the caller.
CREATE TABLE granule (
	tx_id INTEGER NOT NULL REFERENCES tx (id) ON DELETE CASCADE,
	kind  TEXT    NOT NULL,
	path  TEXT    NOT NULL,
	PRIMARY KEY (tx_id, kind, path)
) WITHOUT ROWID;

-- commit_counter hands out commit seqs; a single row, never decreasing,
-- so seqs stay unique even if old history is ever pruned.
CREATE TABLE commit_counter (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	last_seq INTEGER NOT NULL
);
INSERT INTO commit_counter (id, last_seq) VALUES (1, 0);
