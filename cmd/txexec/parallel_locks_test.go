package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockRun is a run of n commands whose attempts are all running; wounds
// counts the calls of each one's wound.
func lockRun(n int) (*parallelRun, []int) {
	r := &parallelRun{}
	wounds := make([]int, n)
	for i := range n {
		r.lockEpoch++
		r.cmds = append(r.cmds, &parallelCmd{seq: i, wound: func() { wounds[i]++ }, ended: make(chan struct{}),
			attemptEpoch: r.lockEpoch})
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

// TestParallelLockTryVoids: a command whose lock try was refused while
// another command of the run held host locks is void (run again, not
// judged), and every later holder not let through its gate is stopped; a
// try refused while no other command held any stands, until one takes a
// lock during the attempt (its report may have come late); a holder that
// ended since the attempt began counts; one let through its gate, or
// ended, is not voided.
func TestParallelLockTryVoids(t *testing.T) {
	t.Run("later holders", func(t *testing.T) {
		r, wounds := lockRun(4)
		r.heldLocks(r.cmds[2], 2)
		r.heldLocks(r.cmds[3], 3)
		r.lockTryRefused(r.cmds[1])
		assert.Equal(t, []int{0, 0, 1, 1}, wounds)
		assert.True(t, r.cmds[1].void)
		assert.False(t, r.cmds[0].void)
		assert.True(t, r.cmds[2].woundedByTry)
		assert.Equal(t, 1, r.cmds[2].woundedBy)
		assert.Equal(t, []<-chan struct{}{r.cmds[2].ended, r.cmds[3].ended}, r.cmds[1].voidWaits)
		assert.Contains(t, woundedWhy(r.cmds[2], 1, true), "command 1 of the run, before command 2, was refused a lock")
		assert.Contains(t, woundedWhy(r.cmds[2], 1, false), "command 1 of the run, before command 2, waited for a lock")
	})
	t.Run("no other holder", func(t *testing.T) {
		r, wounds := lockRun(3)
		r.lockTryRefused(r.cmds[0])
		assert.False(t, r.cmds[0].void, "held outside the run: it stands")
		// A later command says it holds a lock: it may have taken it
		// before the try and said so after.
		r.heldLocks(r.cmds[2], 2)
		assert.True(t, r.cmds[0].void)
		assert.Equal(t, []int{0, 0, 1}, wounds)
	})
	t.Run("earlier holder", func(t *testing.T) {
		r, wounds := lockRun(3)
		r.heldLocks(r.cmds[0], 0)
		r.lockTryRefused(r.cmds[1])
		assert.True(t, r.cmds[1].void, "in order the earlier one would have let go")
		assert.Empty(t, r.cmds[1].voidWaits, "it waits for the earlier ones to settle")
		assert.Equal(t, []int{0, 0, 0}, wounds)
	})
	t.Run("holder ended", func(t *testing.T) {
		r, _ := lockRun(3)
		r.lockEpoch++
		r.cmds[2].heldEnded = r.lockEpoch // after 1's attempt began
		r.cmds[0].heldEnded = r.cmds[1].attemptEpoch - 1
		r.lockTryRefused(r.cmds[1])
		assert.True(t, r.cmds[1].void)
		r.cmds[2].heldEnded = 0
		r.lockTryRefused(r.cmds[0])
		assert.False(t, r.cmds[0].void, "1 began after 0's attempt, and holds none")
	})
	t.Run("let through or ended", func(t *testing.T) {
		r, wounds := lockRun(3)
		r.heldLocks(r.cmds[2], 2)
		r.cmds[0].passed = true
		r.lockTryRefused(r.cmds[0])
		r.cmds[1].wound = nil
		r.lockTryRefused(r.cmds[1])
		assert.False(t, r.cmds[0].void)
		assert.False(t, r.cmds[1].void)
		assert.Equal(t, []int{0, 0, 0}, wounds)
	})
	t.Run("stopped at its gate", func(t *testing.T) {
		r, _ := lockRun(2)
		stops := 0
		var tx int64
		assert.False(t, r.stopVoid(r.cmds[0], func() { stops++ }, 5, &tx))
		r.heldLocks(r.cmds[1], 1)
		r.lockTryRefused(r.cmds[0])
		assert.True(t, r.stopVoid(r.cmds[0], func() { stops++ }, 5, &tx))
		assert.Equal(t, 1, stops)
		assert.Equal(t, int64(5), tx)
	})
}

// TestWaitAll: it returns once every channel is closed, or when its
// context ends.
func TestWaitAll(t *testing.T) {
	a, b := make(chan struct{}), make(chan struct{})
	close(a)
	close(b)
	require.NoError(t, waitAll(context.Background(), []<-chan struct{}{a, b}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, waitAll(ctx, []<-chan struct{}{a, make(chan struct{})}), context.Canceled)
}
