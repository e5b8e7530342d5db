package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// lockRun is a run of n commands whose attempts are all running; wounds
// counts the calls of each one's wound.
func lockRun(n int) (*parallelRun, []int) {
	r := &parallelRun{}
	wounds := make([]int, n)
	for i := range n {
		r.cmds = append(r.cmds, &parallelCmd{seq: i, wound: func() { wounds[i]++ }})
	}
	return r, wounds
}

// TestParallelLockWaitWounds: a command whose lock request waits stops
// every later command that holds a host lock and was not let through its
// gate, once; not the earlier ones, not those without locks, not one
// committing; one that takes a lock while an earlier command waits is
// stopped then, and none after the wait ended.
func TestParallelLockWaitWounds(t *testing.T) {
	t.Run("later holders", func(t *testing.T) {
		r, wounds := lockRun(5)
		r.heldLocks(r.cmds[0], 0) // earlier: never stopped for a later wait
		r.heldLocks(r.cmds[2], 2)
		r.heldLocks(r.cmds[3], 3)
		r.cmds[3].passed = true // committing: releases its locks itself
		r.lockWaitBegan(r.cmds[1])
		assert.Equal(t, []int{0, 0, 1, 0, 0}, wounds)
		assert.True(t, r.cmds[2].wounded)
		assert.Equal(t, 1, r.cmds[2].woundedBy)
		assert.Equal(t, int64(2), r.cmds[2].lockTx)

		// Command 4 takes a lock while 1 still waits: it may hold the
		// lock 1 waits for.
		r.heldLocks(r.cmds[4], 4)
		assert.Equal(t, []int{0, 0, 1, 0, 1}, wounds)

		// Another wait wounds nobody twice.
		r.lockWaitBegan(r.cmds[1])
		assert.Equal(t, []int{0, 0, 1, 0, 1}, wounds)
	})
	t.Run("after the wait", func(t *testing.T) {
		r, wounds := lockRun(3)
		r.lockWaitBegan(r.cmds[0])
		r.lockWaitBegan(r.cmds[0])
		r.lockWaitEnded(r.cmds[0])
		r.heldLocks(r.cmds[1], 1) // one wait of two still on
		r.lockWaitEnded(r.cmds[0])
		r.lockWaitEnded(r.cmds[0]) // more ends than waits: harmless
		r.heldLocks(r.cmds[2], 2)
		assert.Equal(t, []int{0, 1, 0}, wounds)
		r.lockWaitBegan(r.cmds[0])
		assert.Equal(t, []int{0, 1, 1}, wounds)
	})
	t.Run("chain", func(t *testing.T) {
		// 1 waits for 2's lock, 0 for 1's: each stops those after it.
		r, wounds := lockRun(3)
		for _, c := range r.cmds {
			r.heldLocks(c, int64(c.seq))
		}
		r.lockWaitBegan(r.cmds[1])
		assert.Equal(t, []int{0, 0, 1}, wounds)
		r.lockWaitBegan(r.cmds[0])
		assert.Equal(t, []int{0, 1, 1}, wounds)
		assert.Equal(t, 1, r.cmds[2].woundedBy)
		assert.Equal(t, 0, r.cmds[1].woundedBy)
	})
	t.Run("ended attempt", func(t *testing.T) {
		r, wounds := lockRun(2)
		r.heldLocks(r.cmds[1], 1)
		r.cmds[1].wound = nil // its txexec has exited
		r.lockWaitBegan(r.cmds[0])
		assert.Equal(t, []int{0, 0}, wounds)
		assert.False(t, r.cmds[1].wounded)
	})
}
