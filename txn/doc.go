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
//   - Commit order: staged data synced → one store.Commit (validation, redo
//     records, commit record: the commit point) → Apply → MarkApplied →
//     staging removed. A crash before the commit point leaves nothing;
//     after it, recovery runs Apply again.
//   - Apply is idempotent: every redo op names the inode it expects and is
//     skipped when that inode is not where it looks, so applying any prefix
//     and then the whole list gives the same host as applying it once.
//
// Lock order, outermost first: store's (Store.commitMu, then SQLite's
// write lock); validation callbacks run under both and take no lock of
// the store.
package txn
