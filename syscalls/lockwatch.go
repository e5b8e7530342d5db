package syscalls

import (
	"time"

	"golang.org/x/sys/unix"

	"txexec/hostlock"
)

// HostLockWatch is told how the transaction meets the holders of locks on
// host originals. txexec parallel breaks deadlocks between its commands
// with it: a command waiting for a lock that a later command holds
// until its own (later) commit would wait forever (docs/semantics.md
// §11). Its methods are called by the handlers, from several workers at
// once.
type HostLockWatch interface {
	// Held: the transaction has taken a lock on a host original, or
	// already held it (called after each request granted).
	Held()
	// Waiting: a blocking request has waited LockWaitReported for a lock
	// held outside the transaction. Waited follows, once, when that
	// request's wait ends, however it ends.
	Waiting()
	Waited()
	// Busy: a request that does not wait (flock's LOCK_NB, F_SETLK,
	// F_OFD_SETLK, lockf's F_TLOCK) failed because the lock is held
	// outside the transaction, by whomever: the caller is told
	// EWOULDBLOCK or EAGAIN.
	Busy()
}

// LockWaitReported is how long a blocking request waits for a host lock
// before HostLockWatch.Waiting is told: long enough that a lock held for
// a moment by a process outside (or a command about to commit) is not
// reported, short against the commands txexec parallel runs.
const LockWaitReported = 150 * time.Millisecond

// watchHostWait wraps wait, the wait of a blocking request for a host
// lock, so that a wait of LockWaitReported is told to k.HostLockWatch;
// waited, called when the request returns, ends the reported wait.
func (k *Kernel) watchHostWait(wait hostlock.Waiter) (hostWait hostlock.Waiter, waited func()) {
	w := k.HostLockWatch
	if w == nil || wait == nil {
		return wait, func() {}
	}
	var since time.Time // the first refusal
	reported := false
	hostWait = func() error {
		switch {
		case since.IsZero():
			since = time.Now()
		case !reported && time.Since(since) >= LockWaitReported:
			reported = true
			w.Waiting()
		}
		return wait()
	}
	return hostWait, func() {
		if reported {
			w.Waited()
		}
	}
}

// refusedHostLock tells k.HostLockWatch when err, the answer of the host
// lock table to a request that does not wait (nil wait), says the lock is
// held outside the transaction.
func (k *Kernel) refusedHostLock(wait hostlock.Waiter, err error) {
	if k.HostLockWatch != nil && wait == nil && (err == unix.EWOULDBLOCK || err == unix.EAGAIN) {
		k.HostLockWatch.Busy()
	}
}

// heldHostLock tells k.HostLockWatch that the transaction holds a host
// lock.
func (k *Kernel) heldHostLock() {
	if k.HostLockWatch != nil {
		k.HostLockWatch.Held()
	}
}
