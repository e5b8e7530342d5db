-- 0009_parallel: the runs of txexec parallel, and which of their commands
-- each transaction ran, so that txexec log can show one run's
-- transactions in the order they committed.

-- parallel_run is one txexec parallel: its commands committed in input
-- order.
CREATE TABLE parallel_run (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	commands  INTEGER NOT NULL, -- how many
	begin_ns  INTEGER NOT NULL
);

-- A transaction of a parallel run: the run, and the command's place in
-- it from 0 (a command re-run after a conflict has several transactions
-- with the same place). NULL for other transactions.
ALTER TABLE tx ADD COLUMN run_id INTEGER REFERENCES parallel_run (id);
ALTER TABLE tx ADD COLUMN run_seq INTEGER;
CREATE INDEX tx_run ON tx (run_id, run_seq) WHERE run_id IS NOT NULL;
