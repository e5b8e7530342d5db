package floor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastpathWarmup is fastpath_floor.c's WARMUP: calls made before the timed
// ones, recorded or served as they are.
const fastpathWarmup = 200

// agentModes are the modes whose lookups the agent decides.
var agentModes = []string{"trap", "sud", "rewrite"}

func byMode(rs []FastpathResult) map[string]FastpathResult {
	m := map[string]FastpathResult{}
	for _, r := range rs {
		m[r.Mode] = r
	}
	return m
}

// TestFastpathModes: every mode runs; the agent takes every lookup of an
// unchanged path without the supervisor (at most the rewritten site's first
// call is served) and without the caller blocking; forward and notify take
// none; fastpath_floor itself fails when a call was neither served nor
// recorded.
func TestFastpathModes(t *testing.T) {
	bin := BuildFastpath(t)
	const n = 300
	rs, err := RunFastpath(bin, n, 0)
	require.NoError(t, err)
	got := byMode(rs)
	require.Len(t, got, len(FastpathModes))
	for _, m := range agentModes {
		r := got[m]
		assert.GreaterOrEqual(t, r.Recorded, n, "%s: recorded", m)
		assert.LessOrEqual(t, r.Served, 1, "%s: served", m)
		assert.Less(t, r.CswPerCall, 0.5, "%s: the caller should not block", m)
	}
	for _, m := range []string{"notify", "forward"} {
		r := got[m]
		assert.Equal(t, n+fastpathWarmup, r.Served, "%s: served", m)
		assert.Zero(t, r.Recorded, "%s: recorded", m)
		assert.GreaterOrEqual(t, r.CswPerCall, 0.5, "%s: the caller waits for the supervisor", m)
	}
	for _, r := range rs {
		// Plausible: more than a few ns, less than 10 ms per call.
		assert.True(t, r.CallNsMedian > 10 && r.CallNsMedian < 10e6, "%s: implausible %g ns", r.Mode, r.CallNsMedian)
		t.Logf("%-16s %8.0f ns/call (median) %6.3f csw/call", r.Mode, r.CallNsMedian, r.CswPerCall)
	}
}

// TestFastpathForwards: the agent forwards what the design says it must
// not decide itself: a path the transaction changed, a final symlink the
// call follows, a "..", for stat and for open, and the supervisor serves
// every such call.
func TestFastpathForwards(t *testing.T) {
	bin := BuildFastpath(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(file, link))
	cases := []struct {
		name string
		args []string
	}{
		{"changed", []string{"-f", file, "-c"}},
		{"symlink", []string{"-f", link}},
		{"dotdot", []string{"-f", dir + "/../" + filepath.Base(dir) + "/file"}}, // not Join: it cleans ".." away
		{"changed-open", []string{"-f", file, "-c", "-o"}},
		{"symlink-open", []string{"-f", link, "-o"}},
	}
	const n = 100
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, err := RunFastpathArgs(bin, append([]string{"-n", strconv.Itoa(n)}, c.args...), agentModes...)
			require.NoError(t, err)
			for _, r := range rs {
				assert.Zero(t, r.Recorded, "%s: recorded", r.Mode)
				assert.Equal(t, n+fastpathWarmup, r.Served, "%s: served", r.Mode)
			}
		})
	}
	// The same file, unchanged and named directly, takes the fast path.
	rs, err := RunFastpathArgs(bin, []string{"-n", strconv.Itoa(n), "-f", file}, agentModes...)
	require.NoError(t, err)
	for _, r := range rs {
		assert.GreaterOrEqual(t, r.Recorded, n, "%s: recorded", r.Mode)
	}
}

// TestFastpathOpen: with open+close as the call, the agent modes take every
// open of an unchanged file natively (relative to the agent's root
// descriptor), and an open for writing made from the agent page itself is
// notified by the base filter, which checks openat's flags (the child fails
// otherwise; Refused counts it).
func TestFastpathOpen(t *testing.T) {
	bin := BuildFastpath(t)
	const n = 300
	rs, err := RunFastpathArgs(bin, []string{"-n", strconv.Itoa(n), "-o"},
		append([]string{"native", "notify", "forward"}, agentModes...)...)
	require.NoError(t, err)
	got := byMode(rs)
	for _, m := range agentModes {
		assert.GreaterOrEqual(t, got[m].Recorded, n, "%s: recorded", m)
		assert.Equal(t, 1, got[m].Refused, "%s: the open for writing from the agent page", m)
	}
	assert.Equal(t, 1, got["forward"].Refused, "forward: the open for writing from the agent page")
	assert.Equal(t, n+fastpathWarmup, got["notify"].Served, "notify: served")
	assert.Equal(t, n+fastpathWarmup, got["forward"].Served, "forward: served")
	for _, r := range rs {
		t.Logf("%-8s %8.0f ns/open+close (median)", r.Mode, r.CallNsMedian)
	}
}

// BenchmarkFastpath runs every mode of fastpath_floor in one run for each
// gap of busy work after a call (0, 10, 30, 100 µs) and reports each mode's
// median time per call, its ratios to native and to the notify floor, and
// the caller's context switches per call; then the lookup modes with
// open+close as the call.
func BenchmarkFastpath(b *testing.B) {
	bin := BuildFastpath(b)
	for _, gap := range []int{0, 10, 30, 100} {
		b.Run(fmt.Sprintf("gap=%dus", gap), func(b *testing.B) {
			n := max(b.N, minCalls)
			b.ResetTimer()
			rs, err := RunFastpath(bin, n, gap)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			got := byMode(rs)
			native, notify := got["native"].CallNsMedian, got["notify"].CallNsMedian
			for _, r := range rs {
				b.ReportMetric(r.CallNsMedian, r.Mode+"-ns/call")
				b.ReportMetric(r.CswPerCall, r.Mode+"-csw/call")
			}
			for _, m := range []string{"notify", "trap", "forward", "sud", "rewrite"} {
				b.ReportMetric(got[m].CallNsMedian/native, m+"/native")
			}
			for _, m := range []string{"trap", "sud", "rewrite"} {
				b.ReportMetric(got[m].CallNsMedian/notify, m+"/notify")
			}
			b.ReportMetric(got["getppid-sud"].CallNsMedian/got["getppid-native"].CallNsMedian, "getppid-sud/native")
			b.ReportMetric(got["getppid-filters"].CallNsMedian/got["getppid-native"].CallNsMedian, "getppid-filters/native")
		})
	}
	// open+close, no gap: the floor installs the descriptor (ADDFD+SEND),
	// the agent opens relative to its root descriptor and fstats.
	b.Run("open", func(b *testing.B) {
		n := max(b.N, minCalls)
		b.ResetTimer()
		rs, err := RunFastpathArgs(bin, []string{"-n", strconv.Itoa(n), "-o"},
			"native", "notify", "trap", "forward", "sud", "rewrite")
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		got := byMode(rs)
		for _, r := range rs {
			b.ReportMetric(r.CallNsMedian, r.Mode+"-ns/call")
		}
		for _, m := range []string{"notify", "trap", "sud", "rewrite"} {
			b.ReportMetric(got[m].CallNsMedian/got["native"].CallNsMedian, m+"/native")
		}
	})
}
