package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// gateRun is a run of one command whose "txexec" is sh running script,
// with the commit gate as its descriptor 3.
func gateRun(script string) (*parallelRun, *parallelCmd) {
	ctx, stop := context.WithCancel(context.Background())
	c := &parallelCmd{seq: 0, argv: []string{"unused"}, ctx: ctx, stop: stop, settled: make(chan struct{})}
	return &parallelRun{exe: "/bin/sh", childArgs: []string{"-c", script, "sh"}, cmds: []*parallelCmd{c}}, c
}

// attemptWithin runs r's attempt of c and fails the test if it does not
// return within d (killing the command then, through its context).
func attemptWithin(t *testing.T, r *parallelRun, c *parallelCmd, d time.Duration) attemptResult {
	t.Helper()
	done := make(chan attemptResult, 1)
	go func() { done <- r.attempt(c) }()
	select {
	case res := <-done:
		return res
	case <-time.After(d):
		c.stop()
		<-done
		require.FailNow(t, "the attempt did not end: its command waits at the gate")
		return attemptResult{}
	}
}

// TestParallelInterruptedAtGate: an attempt that reaches its gate after
// the run was interrupted, and was not stopped by the interruption (its
// command's flag of being let through was still that of its last
// attempt), is turned away: the gate closes and its txexec, reading the
// end, aborts; the driver does not wait for it for ever.
func TestParallelInterruptedAtGate(t *testing.T) {
	r, c := gateRun(`echo "ready 7" >&3; cat <&3 >/dev/null`)
	r.interrupted = unix.SIGTERM
	res := attemptWithin(t, r, c, 20*time.Second)
	assert.Equal(t, []int64{7}, res.txIDs)
	assert.False(t, res.committed)
	assert.False(t, c.passed)
}

// TestParallelPassedEndsWithAttempt: a command let through its gate is
// "passed" only until its attempt's txexec exits, so that an interruption
// between a conflicted attempt and the next stops the next one.
func TestParallelPassedEndsWithAttempt(t *testing.T) {
	// Let through, it reports a conflict, as a commit that lost does.
	r, c := gateRun(`echo "ready 9" >&3; read go <&3; [ "$go" = go ] && echo conflict >&3`)
	res := attemptWithin(t, r, c, 20*time.Second)
	require.True(t, res.conflict, "the command was let through and reported its conflict")
	assert.False(t, c.passed, "not committing once its txexec exited")
	r.interrupt(unix.SIGTERM)
	assert.Error(t, c.ctx.Err(), "the interruption stops its next attempt")
}
