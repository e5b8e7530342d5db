// Package fastlookup is the memory a transaction shares with the
// fast-lookup agent that runs inside its programs (docs/fastpath.md §4):
// the layout of that memory, which fastlookup.h declares again for the
// agent's C; the tree's sets, which the supervisor publishes into before
// its view changes anything, and the symlinks the view followed (Tree);
// the agent's decisions in Go, for tests (Decide, Resolve); and a process's ring of the calls the
// agent made natively, which the supervisor drains (Ring).
//
// It knows no view, transaction, process or notification: vfs publishes
// into a Tree and feeds a Ring's records into its read set; the code that
// injects the agent maps the memfds. It must import nothing of txexec.
//
// Linux analogue: none. The sets are a lock-free, single-writer,
// many-reader structure in the spirit of the kernel's seqcount-protected
// data: the writer changes entries, then increments the generation with
// release ordering; a reader loads the generation (acquire) before it
// reads the entries and states that generation with what it did, so the
// writer can order every reader's observation before or after each change.
//
// Invariants.
//   - Entries of the changed set and the changed objects are never
//     removed, and a changed-set entry's kind is only ever raised: a path
//     the transaction changed stays changed until the transaction ends.
//   - Every entry that a change adds is stored before the generation that
//     change publishes; a fast directory under a changed path is removed
//     (its key set to KeyRemoved) before it, too.
//   - A removed fast directory's slot is never reused, so a reader that
//     matched its key may read a stale (device, inode) but never another
//     directory's.
//   - A published symlink (the links table) is never changed or removed:
//     the agent checks the changed set at the symlink's path before it
//     follows one, so a symlink the transaction replaced is forwarded by
//     that check, not by the table.
//   - An own object in the natives table (an object of the view's own
//     whose fstat is native) is dropped (KeyRemoved) before the view
//     changes what its stat shows apart from the object's own, and never
//     added again; the agent reads the table after its call, so an entry
//     it finds means its call came before such a change. A full natives
//     table only adds no more (their fstats are forwarded, as before).
//   - An overflowing changed set or object set turns the enabled flag off
//     for good: the agent then forwards every call.
//   - Everything read from a ring is untrusted: Ring reads a slot once into
//     its own copy, bounds every field, and never trusts head or tail
//     beyond one lap.
//
// Lock order: none. A Tree is written by one goroutine at a time (the
// view's lock serializes it); a Ring is drained by one goroutine at a time.
package fastlookup
