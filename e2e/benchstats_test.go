package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// TestStatsCountTrappedCalls: TXEXEC_STATS (what make bench records of a
// run) counts the calls the supervisor answered. A program that makes a
// known number of path calls more must show at least that many more, in
// both modes.
func TestStatsCountTrappedCalls(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3")
	dir := t.TempDir()
	stats := filepath.Join(dir, "stats")
	trapped := func(m mode, n int) int {
		t.Helper()
		os.Remove(stats)
		r := run(t, m, command{
			Argv: []string{"python3", "-c", "import os\nfor _ in range(" + strconv.Itoa(n) + "): os.stat('/')"},
			Dir:  dir,
			Env:  []string{"TXEXEC_STATS=" + stats},
		})
		require.Equal(t, 0, r.Status, r.Stderr)
		b, err := os.ReadFile(stats)
		require.NoError(t, err)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "trapped_calls="); ok {
				k, err := strconv.Atoi(v)
				require.NoError(t, err)
				return k
			}
		}
		t.Fatalf("no trapped_calls in %q", b)
		return 0
	}
	for _, m := range underTxexec {
		few, many := trapped(m, 10), trapped(m, 1010)
		require.Greater(t, few, 10, m.String())
		require.GreaterOrEqual(t, many-few, 1000, m.String())
		require.Less(t, many-few, 1100, m.String())
	}
}
