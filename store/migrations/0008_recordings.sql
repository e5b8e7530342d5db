-- 0008_recordings: recordings of runs (txexec --record), for txexec
-- replay and txexec export. A recording is a manifest — the command, its
-- environment, cwd and seed, what it read of the host and what it
-- produced — kept as a content-addressed blob in STATE/blobs/, like the
-- file contents it names, which recordings share.
CREATE TABLE recording (
	id          INTEGER PRIMARY KEY,
	tx_id       INTEGER NOT NULL, -- the transaction of the recorded run
	created_ns  INTEGER NOT NULL,
	manifest    TEXT    NOT NULL  -- sha256 of the manifest blob, in hex
);
