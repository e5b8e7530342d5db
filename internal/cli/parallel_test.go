package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseParallel: parallel's options and a run's together, the run
// options passed on to each command as given (never --retry, which is
// parallel's), and the commands after -- split at :::.
func TestParseParallel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		jobs      int
		keepGoing bool
		retry     int
		childArgs []string
		commands  [][]string
	}{
		{"stdin", nil, 0, false, 0, nil, nil},
		{"-j N", []string{"-j", "4"}, 4, false, 0, nil, nil},
		{"-jN", []string{"-j4"}, 4, false, 0, nil, nil},
		{"--jobs=N and --keep-going", []string{"--jobs=3", "--keep-going"}, 3, true, 0, nil, nil},
		{"run options passed on", []string{"--retry", "2", "--no-durable", "--exclude", "/tmp", "--on-exit=commit", "-j2"}, 2, false, 2,
			[]string{"--on-exit=commit", "--no-durable", "--exclude=/tmp"}, nil},
		{"commands", []string{"-j2", "--", "echo", "a", ":::", "sh", "-c", "x"}, 2, false, 0, nil,
			[][]string{{"echo", "a"}, {"sh", "-c", "x"}}},
		{"one command", []string{"--", "true"}, 0, false, 0, nil, [][]string{{"true"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseParallel(tc.args)
			require.NoError(t, err)
			assert.Equal(t, tc.jobs, p.Run.Jobs)
			assert.Equal(t, tc.keepGoing, p.Run.KeepGoing)
			assert.Equal(t, tc.retry, p.Run.Retry)
			assert.Equal(t, tc.childArgs, p.ChildArgs)
			assert.Equal(t, tc.commands, p.Commands)
		})
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"-j", "0"}, "--jobs 0: expected a count of at least 1"},
		{[]string{"--on-exit=keep"}, "cannot be kept"},
		{[]string{"--passthrough"}, "no transaction"},
		{[]string{"--in-program"}, "no transaction"},
		{[]string{"--deterministic"}, "not supported with txexec parallel"},
		{[]string{"--record"}, "not supported with txexec parallel"},
		{[]string{"--", "a", ":::", ":::", "b"}, "an empty command"},
		{[]string{"--", "a", ":::"}, "an empty command"},
		{[]string{"--bogus"}, "unknown option --bogus"},
	} {
		_, err := ParseParallel(tc.args)
		require.Error(t, err, "%q", tc.args)
		assert.Contains(t, err.Error(), tc.err)
	}
	// A run refuses parallel's options.
	_, err := Parse([]string{"--jobs", "2", "--", "true"})
	assert.ErrorContains(t, err, "unknown option --jobs")
}
