package main

import (
	"context"
	"fmt"

	"txexec/store"
)

// Lock waits between the commands of txexec parallel (docs/semantics.md
// §11). A command's transaction holds the host locks it took until it
// ends (strict two-phase locking), and it ends only after every earlier
// command has settled: an earlier command that waits for such a lock
// would wait forever, and the later one for it. So the earlier one wins
// (wound-wait): a command whose request for a host lock has waited a
// while says so at its gate (gateLockWait), and every later command that
// may hold a host lock and has not been let through its gate is stopped
// (its txexec killed, its transaction aborted, its locks gone with its
// supervisor) and run again once every earlier command has settled, as
// after a conflict. One let through its gate is committing: it releases
// its locks when done. A command cannot tell who holds the lock it waits
// for, so every later holder is stopped, whatever file it locked; a lock
// held outside the run is waited for as natively, at the price of those
// re-runs.
//
// A request that does not wait (flock -n, F_SETLK, lockf's F_TLOCK) fails
// at once where the lock is held: in a serial run no later command would
// have run yet, and every earlier one would have ended and let go of its
// locks, so a try that meets a lock of another command of the run fails
// where a serial run would not have. The command says so at its gate
// (gateLockBusy). If another command of the run may have held the lock
// (it held host locks while the try's attempt ran), the attempt is void:
// not judged, whatever it does next (it mostly fails), but stopped at its
// gate and run again once the earlier commands have settled and the
// later ones it met have ended; those later ones are stopped as for a
// wait. A try refused while no other command held host locks met a lock
// held outside the run, and its outcome stands, as natively.
//
// Which lock refused the try is not known (nor whether the lock another
// command holds is the same file): the driver assumes it may be. So a try
// stays on record for the rest of its attempt, and a command that takes a
// host lock meanwhile voids it too: its gateLocked may have been said
// after the lock was taken, and reached the driver after the try's
// gateLockBusy. That costs re-runs, never the order.
//
// Bound: a void attempt is run again only after every earlier command has
// settled and the later attempts it met have ended; a later command
// stopped for it runs again only after it has settled. So each void
// attempt of a command consumes an attempt of another command that held
// host locks, which cannot recur while it runs, and a lock held outside
// the run cannot make a command run again and again: at most once per
// other command of the run.

// heldLocks is c's gateLocked: its attempt's transaction id holds a host
// lock. An earlier command waiting for one may be waiting for it (taken
// after the earlier one said it waited, while a stopped command's lock
// was free): c is stopped too. A command whose try was refused during its
// attempt may have met it: that attempt is void (and c stopped, if
// later).
func (r *parallelRun) heldLocks(c *parallelCmd, id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.holdsLocks, c.lockTx = true, id
	for _, earlier := range r.cmds[:c.seq] {
		if earlier.lockWaits > 0 {
			r.woundLocked(c, earlier, false)
			break
		}
	}
	for _, other := range r.cmds {
		if other != c && other.tried {
			r.voidTry(other)
		}
	}
}

// lockWaitBegan is c's gateLockWait: a request of its attempt has waited
// for a host lock. Every later command that may hold one is stopped.
func (r *parallelRun) lockWaitBegan(c *parallelCmd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.lockWaits++
	for _, later := range r.cmds[c.seq+1:] {
		if later.holdsLocks {
			r.woundLocked(later, c, false)
		}
	}
}

// lockWaitEnded is c's gateLockWaited: a wait lockWaitBegan reported is
// over.
func (r *parallelRun) lockWaitEnded(c *parallelCmd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.lockWaits > 0 {
		c.lockWaits--
	}
}

// lockTryRefused is c's gateLockBusy: a lock try of its attempt was
// refused.
func (r *parallelRun) lockTryRefused(c *parallelCmd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.tried = true
	r.voidTry(c)
}

// voidTry makes c's attempt, whose lock try was refused, void if another
// command of the run holds host locks, or held them since the attempt
// began: every later one that holds them is stopped, and c runs again
// once they have ended. Not once c was let through its gate, or has
// ended.
//
// Preconditions: r.mu is held.
func (r *parallelRun) voidTry(c *parallelCmd) {
	if c.passed || c.wound == nil {
		return
	}
	for _, other := range r.cmds {
		switch {
		case other == c:
		case other.holdsLocks && other.seq > c.seq:
			r.woundLocked(other, c, true)
			c.void = true
			c.voidWaits = append(c.voidWaits, other.ended)
		case other.holdsLocks || other.heldEnded > c.attemptEpoch:
			// An earlier command lets go of its locks before c's turn;
			// a later one that ended holds none any more.
			c.void = true
		}
	}
}

// stopVoid stops c's attempt at its gate, with transaction id, if it is
// void: wound kills its txexec. It says whether it did.
func (r *parallelRun) stopVoid(c *parallelCmd, wound context.CancelFunc, id int64, voidTx *int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !c.void {
		return false
	}
	*voidTx = id
	wound()
	return true
}

// waitAll waits until every channel of chans is closed, or ctx is done.
func waitAll(ctx context.Context, chans []<-chan struct{}) error {
	for _, ch := range chans {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// woundLocked stops c's attempt for the lock wait (or, if try, the
// refused lock try) of earlier command by, unless it was let through its
// gate (it is committing, and releases its locks when done) or has ended.
//
// Preconditions: r.mu is held.
func (r *parallelRun) woundLocked(c, by *parallelCmd, try bool) {
	if c.passed || c.wound == nil || c.wounded {
		return
	}
	c.wounded, c.woundedBy, c.woundedByTry = true, by.seq, try
	c.wound()
}

// woundedWhy is why the attempt of c stopped for command by's lock wait
// (or, if try, its refused lock try) was aborted.
func woundedWhy(c *parallelCmd, by int, try bool) string {
	what := "waited for a lock on a host file"
	if try {
		what = "was refused a lock on a host file it tried"
	}
	return fmt.Sprintf("stopped by txexec parallel: command %d of the run, before command %d, %s, which this one may have held until its commit (docs/semantics.md §11)", by, c.seq, what)
}

// voidWhy is why c's void attempt was aborted.
func voidWhy(c *parallelCmd) string {
	return fmt.Sprintf("stopped by txexec parallel: command %d of the run was refused a lock on a host file it tried while another command of the run held host locks, which in order it would not have; run again after the earlier commands (docs/semantics.md §11)", c.seq)
}

// recordStopped records the transaction id of a command whose txexec was
// killed by the driver aborted with why: the reason recovery would give
// (its supervisor died) would not say it. A txexec starting meanwhile
// may have recorded that first, and then it stays.
func (r *parallelRun) recordStopped(id int64, why string) {
	st, err := store.Open(stateDirOf(r.opts), store.Options{Durable: r.opts.Durable, Owner: selfOwner()})
	if err != nil {
		return // recovery records it
	}
	defer st.Close()
	if st.Abort(id, why) == nil {
		st.RemoveStaging(id)
	}
}
