-- 0005_staging_areas: staging areas on other mounts than the state
-- directory's (docs/architecture.md §4: staged objects live on the mount of the paths
-- they shadow, so that write-through is a rename).

-- staging_area is every staging area a transaction has outside the state
-- directory: a directory at the root of another mount. A row is committed
-- before its directory is created, so that abort, recovery and GCStaging
-- find every area, whenever a crash happens; it is deleted once the
-- directory is removed.
CREATE TABLE staging_area (
	tx_id INTEGER NOT NULL REFERENCES tx (id) ON DELETE CASCADE,
	path  TEXT    NOT NULL, -- absolute: MOUNTPOINT/.txexec-staging-INSTANCE-ID
	PRIMARY KEY (tx_id, path)
) WITHOUT ROWID;

-- instance names this state directory in the names of its staging areas,
-- so that state directories whose transaction ids coincide never share
-- one. A single row, made once.
CREATE TABLE instance (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	name TEXT    NOT NULL
);
INSERT INTO instance (id, name) VALUES (1, lower(hex(randomblob(8))));
