// Package store keeps txexec's durable state in a state directory: a
// SQLite database in WAL mode (txexec.db) and the staging areas, where a
// transaction's new and copied-up objects live until write-through, on the
// mount of the paths they shadow (docs/architecture.md §4): staging/ID in the state
// directory for its own mount, and MOUNTPOINT/.txexec-staging-INSTANCE-ID
// at the root of every other mount the transaction changed
// (AddStagingArea; INSTANCE, made with the database, keeps two state
// directories apart). It is the only package with SQL in it.
//
// It owns: transactions and their states (running, kept, committed,
// applied, aborted; see State), the commit point, idempotent redo records,
// the write sets (granules) committed transactions leave for validating
// later ones, the read sets (what a transaction observed of the host,
// stored with its commit or Keep, so that a kept transaction can be
// validated by another process), the commit sequence, history for txexec
// log and show (with the txexec parallel runs, parallel_run, and each
// transaction's run and place in it), the claims recovery makes on
// interrupted write-throughs, the commit lock across processes
// (LockCommits: flock on commit.lock behind gate.lock), staging areas
// (recorded in staging_area) and their garbage collection, and the undo
// areas that hold before-images for txexec undo (undo/ID, and
// MOUNTPOINT/.txexec-undo-INSTANCE-ID recorded in undo_area), their
// retention (table setting) and garbage collection. Schema migrations are
// embedded (migrations/*.sql) and recorded in schema_migrations.
//
// It must not know about seccomp, tracees, path resolution or what a redo
// op or a granule does: those are opaque data it stores in order and
// returns. The op kinds are named here (OpRename, …) so that vfs, which
// journals them, and txn, which applies them, share one list; the granule
// kinds are vfs's. It imports nothing of txexec's.
//
// The analogue is a database's log manager with its commit records (TxOS
// keeps the equivalent in kernel memory; Valor in a kernel log). Unlike a
// database log it never holds data pages: bulk data stays in staged files,
// and a redo record names paths and the inodes expected there.
//
// Invariants:
//   - A transaction's redo ops, write set, commit seq and state committed
//     are written in one SQL transaction; its COMMIT is the commit point.
//     Before it nothing of the transaction is in the log; after it all is.
//   - Every write runs in BEGIN IMMEDIATE (the _txlock=immediate DSN
//     option), so writers in all processes serialize on SQLite's write
//     lock, waiting up to DefaultBusyTimeout rather than failing with
//     SQLITE_BUSY. Commit seqs come from one counter under that lock:
//     unique and increasing in commit order.
//   - journal_mode is read back and must be wal; synchronous is FULL when
//     Options.Durable, else OFF.
//   - A transaction has one Owner (a supervisor pid and its start time) at
//     a time; only the owner writes a committed transaction through, and
//     recovery takes over only transactions whose owner is dead.
//   - A transaction's snapshot (StartSeq) is the last commit written
//     through when it began, so that every commit whose write-through it
//     may have seen half done is in its validation window.
//   - A staging directory is removed only when its transaction is aborted
//     or applied, or unknown, under the write lock (GCStaging), so never
//     while Begin creates it.
//   - An undo area on another mount, as a staging area, is recorded before
//     its directory is made (only for a committed transaction, by its
//     write-through), and its record deleted after the directory.
//   - A staging area on another mount is recorded (committed) before its
//     directory is made, and only for a running transaction; its record is
//     deleted only after the directory is removed. So abort, recovery and
//     GCStaging find every area, whenever a crash came, and never remove
//     one a transaction still needs.
//
// On a full disk: FreeStaging empties a staging area without writing to
// the database, for aborts and recovery to free space first; a reserve
// file (ReserveName) is given up when SQLite cannot open or write for want
// of space, and a full disk's error wraps unix.ENOSPC.
//
// Lock order, outermost first: gate.lock, then commit.lock (flocks, all
// processes; see LockCommits), Store.commitMu (this process's
// committers), SQLite's write lock (all processes), faultMu.
package store
