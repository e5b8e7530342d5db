package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// statsOf runs c in mode m with TXEXEC_STATS (what make bench records of a
// run) and returns the values txexec wrote.
func statsOf(t *testing.T, m mode, c command) map[string]int {
	t.Helper()
	stats := filepath.Join(t.TempDir(), "stats")
	c.Env = append(c.Env, "TXEXEC_STATS="+stats)
	r := run(t, m, c)
	require.Equal(t, 0, r.Status, r.Stderr)
	b, err := os.ReadFile(stats)
	require.NoError(t, err)
	values := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok, "line %q of %q", l, b)
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "line %q", l)
		values[k] = n
	}
	return values
}

// TestStatsCountTrappedCalls: TXEXEC_STATS counts the calls the supervisor
// answered, in all and by call. A program that makes a known number of
// path calls more must show at least that many more, in both modes, and
// the counts by call add up to the whole.
func TestStatsCountTrappedCalls(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3")
	dir := t.TempDir()
	trapped := func(m mode, n int) (all, stats int) {
		t.Helper()
		st := statsOf(t, m, command{
			Argv: []string{"python3", "-c", "import os\nfor _ in range(" + strconv.Itoa(n) + "): os.stat('/')"},
			Dir:  dir,
		})
		k, ok := st["trapped_calls"]
		require.True(t, ok, "no trapped_calls in %v", st)
		sum := 0
		for key, v := range st {
			if strings.HasPrefix(key, "trapped_calls.") {
				sum += v
			}
		}
		require.Equal(t, k, sum, "trapped_calls.NAME of %v", st)
		return k, st["trapped_calls.newfstatat"]
	}
	for _, m := range underTxexec {
		few, fewStats := trapped(m, 10)
		many, manyStats := trapped(m, 1010)
		require.Greater(t, few, 10, m.String())
		require.GreaterOrEqual(t, many-few, 1000, m.String())
		require.Less(t, many-few, 1100, m.String())
		require.GreaterOrEqual(t, manyStats-fewStats, 1000, m.String())
	}
}

// TestStatsCountExecsForksAndThreads: TXEXEC_STATS counts the tree's execs,
// new processes and new threads. A shell that runs a program n times more
// forks and execs exactly n times more; a program that starts n threads
// more shows n threads more and no fork; a commit takes time, a run under
// --passthrough commits nothing.
func TestStatsCountExecsForksAndThreads(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "sh", "true", "python3")
	dir := t.TempDir()
	trueBin, err := exec.LookPath("true")
	require.NoError(t, err)
	// sh forks a child for each run of the program true (by its path: not
	// the builtin), which execs it; the loop itself needs no other process.
	shell := func(n int) command {
		return command{Argv: []string{"sh", "-c", "i=0; while [ $i -lt " + strconv.Itoa(n) + " ]; do " + trueBin + "; i=$((i+1)); done"}, Dir: dir}
	}
	threads := func(n int) command {
		return command{Argv: []string{"python3", "-c", "import threading\nfor _ in range(" + strconv.Itoa(n) + "):\n t = threading.Thread(target=lambda: None); t.start(); t.join()"}, Dir: dir}
	}
	for _, m := range underTxexec {
		few, many := statsOf(t, m, shell(1)), statsOf(t, m, shell(21))
		for _, k := range []string{"execs", "forks", "threads", "commit_ns"} {
			require.Contains(t, few, k, m.String())
		}
		assert.Equal(t, 20, many["execs"]-few["execs"], "%s: execs", m)
		assert.Equal(t, 20, many["forks"]-few["forks"], "%s: forks", m)
		assert.Equal(t, 0, many["threads"]-few["threads"], "%s: threads", m)
		assert.GreaterOrEqual(t, few["execs"], 1, "%s: the command's own exec", m)

		few, many = statsOf(t, m, threads(1)), statsOf(t, m, threads(11))
		assert.Equal(t, 10, many["threads"]-few["threads"], "%s: threads", m)
		assert.Equal(t, 0, many["forks"]-few["forks"], "%s: forks", m)
		assert.Equal(t, 0, many["execs"]-few["execs"], "%s: execs", m)
		if m == passthrough {
			assert.Zero(t, many["commit_ns"], "nothing to commit under --passthrough")
		} else {
			assert.Positive(t, many["commit_ns"], "the commit's time")
		}
	}
}

// TestStatsCountServiceTimes: TXEXEC_STATS says how many replies installed
// a descriptor and how long the workers spent in handlers and replies. A
// program that opens a file n times more (every call trapped) shows n
// descriptor replies more, the times of its calls are counted (at least a
// microsecond each), and so is the supervisor's own CPU time.
func TestStatsCountServiceTimes(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3")
	dir := t.TempDir()
	opens := func(n int) command {
		return command{Argv: []string{"python3", "-c", "import os\nfor _ in range(" + strconv.Itoa(n) + "): os.close(os.open('/etc/hostname', os.O_RDONLY))"},
			Dir: dir, TxArgs: noFastLookups}
	}
	for _, m := range underTxexec {
		few, many := statsOf(t, m, opens(10)), statsOf(t, m, opens(1010))
		for _, k := range []string{"descriptor_replies", "handle_ns", "reply_ns", "supervisor_cpu_ns"} {
			require.Contains(t, few, k, m.String())
		}
		assert.GreaterOrEqual(t, many["descriptor_replies"]-few["descriptor_replies"], 1000, "%s: descriptor replies", m)
		assert.Less(t, many["descriptor_replies"]-few["descriptor_replies"], 1100, "%s: descriptor replies", m)
		// Each call costs at least a microsecond of handling and of
		// reply. (Not the difference of the two runs: one slow call of
		// either, a start-up's, outweighs a thousand opens.)
		assert.Greater(t, many["handle_ns"], 1010*1000, "%s: handle_ns", m)
		assert.Greater(t, many["reply_ns"], 1010*1000, "%s: reply_ns", m)
		assert.Positive(t, many["supervisor_cpu_ns"], m.String())
	}
}
