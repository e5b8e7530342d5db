// Package hostlock holds a transaction's advisory locks on host
// originals: when a process of the transaction takes a lock (flock,
// fcntl, OFD, lockf) on a file that exists on the host, the supervisor
// takes the same lock on the host original, through an open file
// description of its own per file and lock family, so that processes
// outside the transaction wait for it, and the transaction for theirs.
// Locks are only ever added or strengthened, never released, until the
// transaction ends (strict two-phase locking): what the transaction did
// under a lock reaches the host at its write-through, after which Release
// lets go of them all.
//
// Linux analogue: fs/locks.c seen from user space. flock locks are taken
// with flock(2); fcntl's record locks, whichever command the transaction
// used, as OFD locks (F_OFD_SETLK): their owner is the description, not
// the supervisor's process, which opens and closes descriptors on host
// files all the time and would lose a process-owned lock at each close.
// POSIX and OFD locks conflict with each other, so outside processes that
// use either see them.
//
// It must not know about views, system calls or the store: callers give it
// a read-only descriptor on the host original and the range in absolute
// offsets.
package hostlock
