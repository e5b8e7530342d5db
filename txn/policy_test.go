package txn

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOnExit(t *testing.T) {
	for i, name := range OnExitNames {
		p, ok := ParseOnExit(name)
		require.True(t, ok, name)
		assert.Equal(t, OnExit(i), p)
		assert.Equal(t, name, p.String())
	}
	_, ok := ParseOnExit("sucess")
	assert.False(t, ok)
}

// TestSettle: every policy against a command that succeeded or failed, in
// a view doomed or not.
func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		policy  OnExit
		status  int
		doomed  bool
		outcome Outcome
		certain bool // AbortCertain
	}{
		{OnExitSuccess, 0, false, Commit, false},
		{OnExitSuccess, 1, false, Abort, true},
		{OnExitSuccess, 0, true, Commit, true},
		{OnExitSuccess, 1, true, Commit, true},
		{OnExitCommit, 0, false, Commit, false},
		{OnExitCommit, 1, false, Commit, false},
		{OnExitCommit, 1, true, Commit, true},
		{OnExitAbort, 0, false, Abort, true},
		{OnExitAbort, 1, true, Abort, true},
		{OnExitKeep, 0, false, Keep, false},
		{OnExitKeep, 1, false, Keep, false},
		{OnExitKeep, 1, true, Keep, false},
	} {
		name := fmt.Sprintf("%v/status=%d/doomed=%v", tc.policy, tc.status, tc.doomed)
		assert.Equal(t, tc.outcome, Settle(tc.policy, tc.status, tc.doomed), name)
		assert.Equal(t, tc.certain, AbortCertain(tc.policy, tc.status, tc.doomed), name)
	}
}

func TestAfterFailedCommit(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		conflict                 bool
		attempt, retries, status int
		doomed                   bool
		retry                    bool
		exit                     int
	}{
		{"conflict, retries left", true, 0, 2, 0, false, true, 0},
		{"conflict, last retry used", true, 2, 2, 0, false, false, ExitConflict},
		{"conflict, no --retry", true, 0, 0, 0, false, false, ExitConflict},
		{"conflict, command failed", true, 0, 0, 3, false, false, 3},
		{"conflict, command failed of it", true, 0, 0, 3, true, false, ExitConflict},
		{"conflict, doomed, retries left", true, 1, 3, 3, true, true, 0},
		{"other failure, command failed", false, 0, 5, 4, false, false, 4},
		{"other failure, command succeeded", false, 0, 5, 0, false, false, ExitInternal},
	} {
		retry, exit := AfterFailedCommit(tc.conflict, tc.attempt, tc.retries, tc.status, tc.doomed)
		assert.Equal(t, tc.retry, retry, tc.name)
		assert.Equal(t, tc.exit, exit, tc.name)
	}
}
