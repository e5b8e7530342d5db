package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/cli"
)

// TestParallelCommands: standard input gives one sh -c command per
// non-blank line; the command line gives its words, shown quoted.
func TestParallelCommands(t *testing.T) {
	p, err := cli.ParseParallel(nil)
	require.NoError(t, err)
	cmds, err := parallelCommands(p, strings.NewReader("echo a\n\n   \necho 'b c' > f\n"))
	require.NoError(t, err)
	require.Len(t, cmds, 2)
	assert.Equal(t, []string{"sh", "-c", "echo a"}, cmds[0].argv)
	assert.Equal(t, "echo 'b c' > f", cmds[1].line)
	assert.Equal(t, 1, cmds[1].seq)

	p, err = cli.ParseParallel([]string{"--", "printf", "%s\n", "a b", ":::", "true"})
	require.NoError(t, err)
	cmds, err = parallelCommands(p, strings.NewReader("ignored\n"))
	require.NoError(t, err)
	require.Len(t, cmds, 2)
	assert.Equal(t, []string{"printf", "%s\n", "a b"}, cmds[0].argv)
	assert.Equal(t, `printf $'%s\n' 'a b'`, cmds[0].line)
	assert.Equal(t, []string{"true"}, cmds[1].argv)
}

// TestParallelSummary: counts, the first failure's status and command,
// the speed-up over the sum of the commands' times.
func TestParallelSummary(t *testing.T) {
	r := &parallelRun{id: 7}
	for i, c := range []struct {
		outcome string
		status  int
		reruns  int
		wounds  int
		voids   int
		busy    time.Duration
	}{
		{outcomeCommitted, 0, 3, 1, 1, 2 * time.Second},
		{outcomeFailed, 3, 0, 0, 0, time.Second},
		{outcomeFailed, 4, 0, 0, 0, time.Second},
		{outcomeStopped, 0, 0, 0, 0, 0},
	} {
		r.cmds = append(r.cmds, &parallelCmd{seq: i, line: "cmd" + string(rune('a'+i)), outcome: c.outcome,
			status: c.status, reruns: c.reruns, wounds: c.wounds, voids: c.voids, busy: c.busy})
	}
	s := r.summarize(2 * time.Second)
	assert.Equal(t, parallelSummary{Run: 7, Commands: 4, Committed: 1, Failed: 2, Stopped: 1, Rerun: 1, Reruns: 3,
		Wounded: 1, LockTries: 1, Wall: 2, Busy: 4, Speedup: 2, Status: 3, FirstFailed: 1}, s)
	assert.Equal(t, "4 commands, 1 committed, 1 re-run after conflicts, wall time 2.00s, speed-up 2.00x over the sum "+
		"of the commands' times (4.00s); txexec log --run 7; 2 failed, the first with status 3: cmdb; "+
		"1 attempts stopped for an earlier command's lock wait or try; "+
		"1 attempts run again after a lock try met another command's lock; 1 stopped", s.line(r))
}
