// Package txn owns transactions: the transaction objects, begin, commit
// and abort, flat nesting, validation at commit, contention and retry,
// ordered commit, pause and resume, and the write-through of a committed
// transaction's redo list to the host (Apply), which commit and recovery
// share.
//
// It must not know about seccomp or tracees (it does not import interpose
// or syscalls), nor hold SQL: the log is store's.
//
// Its analogue is TxOS's transaction object (sys_xbegin/sys_xend/
// sys_xabort), except that the kernel's in-memory shadow objects are here
// a user-level view (vfs) over staged files, and commit goes through a
// SQLite redo log instead of the kernel's locks.
//
// Invariants:
//   - No steal: nothing uncommitted is written in place on the host, so
//     recovery is redo only.
//   - Commit order: staged objects and their areas fsynced (SyncStaged) →
//     one store.Commit (validation, redo records, commit record: the commit
//     point) → Apply, whose end fsyncs what it changed → MarkApplied →
//     staging areas removed. A crash before the commit point leaves nothing;
//     after it, recovery runs Apply again, fsyncs included. A failed fsync
//     is never retried on its descriptor: before the commit point it
//     aborts, after it the transaction stays committed for recovery.
//   - Abort frees a transaction's staged objects before it writes to the
//     store (Store.FreeStaging), recovery those of orphans likewise: on a
//     disk they filled, that is the room the store needs.
//   - Apply is idempotent: every redo op names the inode it expects and is
//     skipped when that inode is not where it looks, so applying any prefix
//     and then the whole list gives the same host as applying it once.
//   - Before-images (Keeper, for txexec undo) are kept by Apply just before
//     an op it is about to do, never for an op found done, and one kept
//     already is kept as it is: a redo neither doubles them nor takes the
//     object an op put in place for the one it replaced. A create (a rename
//     of a staged object with RENAME_NOREPLACE, under a creates record of
//     its run) keeps nothing unless it finds its path taken.
//   - An undo (Manager.Undo) is a transaction like any other: validated
//     at its commit point (the paths it puts back still hold what the
//     undone transaction left), then written through by Apply, keeping its
//     own before-images.
//
// Contention: the first committer wins (optimistic validation at the
// commit point). A command that lost DefaultPriorityAfterN conflicts in a
// row re-runs under BeginPriority, which holds the store's commit lock
// exclusively from before it begins until it ends: every committer holds
// that lock shared from before its commit point until it is written
// through, so the priority transaction starts with nothing in flight and
// nothing commits until it ends; it cannot lose again except to a
// process txexec does not supervise. Kept transactions are committed
// (CommitKept) by the same protocol, from the prepared state and read set
// stored with them.
//
// Ordered commit (txexec parallel): a Manager's CommitGate is called after
// Prepare and before the commit lock, and returns when every transaction
// to commit before this one has settled (CommitOrder), so that the
// validation sees them all. A gated manager never begins a priority
// transaction: it would hold the lock while waiting for its turn, and the
// transaction whose turn it is needs the lock to commit. Stale tells a
// transaction about to abort whether what it read was changed since it
// began (its failure may then not be that of a serial run).
//
// Lock order, outermost first: the store's commit lock (LockCommits:
// shared for committers and recovery, exclusive for a priority
// transaction, held from before Begin); then store's own (Store.commitMu,
// then SQLite's write lock); validation callbacks run under both and take
// no lock of the store.
package txn
