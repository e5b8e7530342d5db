package main

import (
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

// heldLocks is c's gateLocked: its attempt's transaction id holds a host
// lock. An earlier command waiting for one may be waiting for it (taken
// after the earlier one said it waited, while a stopped command's lock
// was free): c is stopped too.
func (r *parallelRun) heldLocks(c *parallelCmd, id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.holdsLocks, c.lockTx = true, id
	for _, earlier := range r.cmds[:c.seq] {
		if earlier.lockWaits > 0 {
			r.woundLocked(c, earlier)
			return
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
			r.woundLocked(later, c)
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

// woundLocked stops c's attempt for the lock wait of earlier command by,
// unless it was let through its gate (it is committing, and releases its
// locks when done) or has ended.
//
// Preconditions: r.mu is held.
func (r *parallelRun) woundLocked(c, by *parallelCmd) {
	if c.passed || c.wound == nil || c.wounded {
		return
	}
	c.wounded, c.woundedBy = true, by.seq
	c.wound()
}

// recordWounded records the transaction id of command c, whose txexec
// was killed for the lock wait of command by, aborted with why: the
// reason recovery would give (its supervisor died) would not say it. A
// txexec starting meanwhile may have recorded that first, and then it
// stays.
func (r *parallelRun) recordWounded(c *parallelCmd, id int64, by int) {
	st, err := store.Open(stateDirOf(r.opts), store.Options{Durable: r.opts.Durable, Owner: selfOwner()})
	if err != nil {
		return // recovery records it
	}
	defer st.Close()
	why := fmt.Sprintf("stopped by txexec parallel: command %d of the run, before command %d, waited for a lock on a host file, which this one may have held until its commit (docs/semantics.md §11)", by, c.seq)
	if st.Abort(id, why) == nil {
		st.RemoveStaging(id)
	}
}
