package bench

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GapsUS are the lengths of the CPU work after each call in
// BenchmarkFloorGap, in µs: none, and about what a real program computes
// between its path calls (dpkg's man-db trigger and the C build spend 15
// to 30 µs of native CPU time per trapped call).
var GapsUS = []int{0, 10, 30, 100}

// gapMode is one way of running the stat loop with a gap.
type gapMode struct {
	name string
	// argv is the command line for n timed calls of stat on dir/file,
	// each followed by iters iterations of the CPU loop.
	argv func(tb testing.TB, n, iters int, dir string) []string
	// counted says whether its context switches are counted; served
	// whether txexec serves it (its TXEXEC_STATS then give the workers'
	// time per call in handlers and in replies).
	counted, served bool
}

// gapModes: natively (bench/percall.c, and bench/floor's own native loop,
// which its floor is compared with), the bare C supervisor with
// SYNC_WAKE_UP, txexec --passthrough and a transaction; "gap" times the CPU
// loop alone.
func gapModes(percall string) []gapMode {
	fixture := func(prefix ...string) func(tb testing.TB, n, iters int, dir string) []string {
		return func(tb testing.TB, n, iters int, dir string) []string {
			return append(append(prefix, PercallArgs(percall, "stat", dir, n)...), "-b", strconv.Itoa(iters))
		}
	}
	floorRun := func(args ...string) func(tb testing.TB, n, iters int, dir string) []string {
		return func(tb testing.TB, n, iters int, dir string) []string {
			return append([]string{floorBinary(tb), "-n", strconv.Itoa(n), "-b", strconv.Itoa(iters), "-f", filepath.Join(dir, "file")}, args...)
		}
	}
	modes := []gapMode{
		{name: "gap", argv: func(tb testing.TB, n, iters int, dir string) []string {
			return []string{percall, "-o", "busy", "-d", dir, "-n", strconv.Itoa(n), "-b", strconv.Itoa(iters)}
		}},
		{name: "native", argv: fixture(), counted: true},
		{name: "floor-native", argv: floorRun("-m"), counted: true},
		{name: "floor", argv: floorRun("-s"), counted: true},
		{name: "passthrough", counted: true, served: true, argv: func(tb testing.TB, n, iters int, dir string) []string {
			return fixture(served(txexecBinary(tb), "--passthrough")...)(tb, n, iters, dir)
		}},
		{name: "tx", counted: true, served: true, argv: func(tb testing.TB, n, iters int, dir string) []string {
			return fixture(served(txexecBinary(tb))...)(tb, n, iters, dir)
		}},
	}
	if base := os.Getenv(BaseEnv); base != "" {
		modes = append(modes,
			gapMode{name: "passthrough-base", counted: true, served: true, argv: fixture(served(base, "--passthrough")...)},
			gapMode{name: "tx-base", counted: true, served: true, argv: fixture(served(base)...)})
	}
	return modes
}

// BenchmarkFloorGap times a loop of stat calls, each followed by a
// calibrated CPU loop of GapsUS µs (not a sleep: the caller stays on its
// CPU while the supervisor waits), natively, under the bare C supervisor
// (bench/floor, SYNC_WAKE_UP), under `txexec --passthrough` and in a
// transaction. The overhead of a call is its time less the native loop's
// with the same gap (the floor's less its own native loop's).
//
// The modes of a gap take turns: each of gapSamples rounds runs every mode
// once, and a mode's time per call is the median of its rounds. A mode's
// runs back to back would put the floor's and txexec's minutes apart, and
// the overhead at the 100 µs gap is the difference of two times of about
// 100 µs: a drift of the machine's speed between them (the native loop's
// time here moves by up to 3 µs from one round to the next, against
// overheads of 10 to 20 µs) goes straight into the ratio of the two.
//
// Metrics: ns/call, and the context switches (cs/call) and CPU migrations
// (migrations/call) per call of the whole process tree — txexec's threads
// and the floor's supervisor included — counted by the kernel's perf
// events where it lets us (else switches from rusage, no migrations; the
// "switch-counter:" line says which: SwitchCounter) over the first round's
// run of n calls less one of 64, so that start-up and commit drop out;
// under txexec also the workers' time per call in handlers
// (handle-ns/call) and in replies (reply-ns/call), from TXEXEC_STATS over
// the same two runs. n is gapMinCalls, or -benchtime's count when it is
// larger.
// With TXEXEC_BENCH_BASE, the base build's (passthrough-base, tx-base) too,
// in the same run.
func BenchmarkFloorGap(b *testing.B) {
	bin := BuildPercall(b)
	perUS := busyItersPerUS(b, bin)
	sw := Switches()
	fmt.Println(sw.Describe())
	n := roundUp(max(benchtimeCount(), gapMinCalls), 64)
	for _, g := range GapsUS {
		iters := int(math.Round(float64(g) * perUS))
		b.Run(fmt.Sprintf("%dus", g), func(b *testing.B) {
			modes := gapModes(bin)
			res := make([]gapResult, len(modes))
			for round := range gapSamples {
				for i, m := range modes {
					res[i].samples = append(res[i].samples, gapSample(b, m, round, n, iters, &sw, &res[i]))
				}
			}
			for i, m := range modes {
				// The leaf only reports: the testing package runs it
				// twice (b.N of 1, then -benchtime's).
				b.Run(m.name, func(b *testing.B) { res[i].report(b, m, n) })
			}
		})
	}
}

// gapResult is what the runs of one mode at one gap measured.
type gapResult struct {
	samples []float64 // ns per call, one per round
	// counts and stats: of the first round's counted runs of
	// gapBaseCalls and of n calls.
	counts [2]SwitchCounts
	stats  [2]map[string]int64
}

// gapSample runs mode m once and returns its ns per call. In the first
// round, a counted mode's run of n calls is counted (into r), after a run
// of gapBaseCalls whose counts are subtracted.
func gapSample(b *testing.B, m gapMode, round, n, iters int, sw *SwitchCounter, r *gapResult) float64 {
	if round > 0 || !m.counted {
		return gapRun(b, m.argv(b, n, iters, WorkDir(b)), nil, nil, nil)
	}
	var ns float64
	for i, k := range []int{gapBaseCalls, n} {
		var stats *map[string]int64
		if m.served {
			stats = &r.stats[i]
		}
		ns = gapRun(b, m.argv(b, k, iters, WorkDir(b)), sw, &r.counts[i], stats)
	}
	return ns
}

// report reports r's metrics for mode m with runs of n calls.
func (r *gapResult) report(b *testing.B, m gapMode, n int) {
	ns := median(slices.Clone(r.samples))
	b.ReportMetric(ns, "ns/op")
	b.ReportMetric(ns, "ns/call")
	calls := float64(n - gapBaseCalls)
	if !m.counted || calls <= 0 {
		return
	}
	b.ReportMetric((r.counts[1].Switches-r.counts[0].Switches)/calls, "cs/call")
	if !math.IsNaN(r.counts[1].Migrations) {
		b.ReportMetric((r.counts[1].Migrations-r.counts[0].Migrations)/calls, "migrations/call")
	}
	for _, k := range []string{"handle", "reply"} {
		// A -base build from before these counts has none.
		if v, ok := r.stats[1][k+"_ns"]; ok && m.served {
			b.ReportMetric(float64(v-r.stats[0][k+"_ns"])/calls, k+"-ns/call")
		}
	}
}

// benchtimeCount is -test.benchtime's count of iterations when it is given
// as one ("20000x"), else 0: the gap benchmark measures in its parent
// benchmark, whose b.N is always 1.
func benchtimeCount() int {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return 0
	}
	v, ok := strings.CutSuffix(f.Value.String(), "x")
	if !ok {
		return 0
	}
	k, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return k
}

// gapMinCalls is the fewest calls a run of the loop makes, whatever
// -benchtime says: make bench's 2,000 made the ratio of two overheads of
// 10-20 µs swing by half between rounds on this shared machine (1.16x to
// 1.90x in one run); 10,000 take about 1.3 s at the 100 µs gap.
const gapMinCalls = 10000

// gapBaseCalls are the calls of the run whose counts are subtracted.
const gapBaseCalls = 64

// gapSamples is how many rounds of runs at a gap make a mode's time per
// call: their median. One run that met a burst of the machine's other work
// (at the 100 µs gap both txexec modes once paid 23-24 µs against 18 µs
// half an hour before) then moves the ratio of two overheads of 10-20 µs
// no more than the steady runs around it.
const gapSamples = 5

// median is the median of vs, which it sorts.
func median(vs []float64) float64 {
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

func roundUp(n, k int) int { return (n + k - 1) / k * k }

// gapRun runs argv with a fresh state directory and returns its ns/call.
// With a counter, it stores the counts of the run in *counts; with stats,
// the run's TXEXEC_STATS in *stats.
func gapRun(tb testing.TB, argv []string, counter *SwitchCounter, counts *SwitchCounts, stats *map[string]int64) float64 {
	tb.Helper()
	cmd, state := StateCommand(tb, argv...)
	statsFile := filepath.Join(state, "bench-stats")
	if stats != nil {
		cmd.Env = append(cmd.Env, "TXEXEC_STATS="+statsFile)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var err error
	if counter != nil {
		*counts, err = counter.Run(cmd)
	} else {
		err = cmd.Run()
	}
	if err != nil {
		tb.Fatalf("bench: %s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	ns, err := ParseNsPerCall(stdout.Bytes())
	if err != nil {
		tb.Fatalf("%v (stderr: %s)", err, stderr.String())
	}
	if stats != nil {
		if *stats, err = readStats(statsFile); err != nil {
			tb.Fatalf("bench: %s: %v", strings.Join(cmd.Args, " "), err)
		}
	}
	return ns
}

var (
	busyOnce  sync.Once
	busyPerUS float64
)

// busyItersPerUS is how many iterations of the fixture's CPU loop take a
// microsecond here: the fastest of three native runs of 100,000, measured
// once per test process so that every mode and gap of a run uses the same
// counts.
func busyItersPerUS(tb testing.TB, percall string) float64 {
	busyOnce.Do(func() {
		const iters = 100000
		best := math.Inf(1)
		for range 3 {
			dir := TempDir(tb, "txexec-bench-busy-")
			best = min(best, gapRun(tb, []string{percall, "-o", "busy", "-d", dir, "-n", "64", "-w", "64", "-b", strconv.Itoa(iters)}, nil, nil, nil))
		}
		busyPerUS = iters / (best / 1000)
	})
	if !(busyPerUS > 0) {
		tb.Fatal("bench: could not calibrate the CPU loop")
	}
	return busyPerUS
}

// TestPercallLoopsAndProcesses: the fixture's CPU loop, fork and exec
// operations run natively, and it refuses what makes no sense: a loop
// after calls other than stat, exec without a program, a relative one.
func TestPercallLoopsAndProcesses(t *testing.T) {
	bin := BuildPercall(t)
	tiny := BuildTiny(t)
	dir := WorkDir(t)
	run := func(args ...string) (float64, error) {
		out, err := exec.Command(bin, append([]string{"-d", dir, "-n", "64", "-w", "0"}, args...)...).Output()
		if err != nil {
			return 0, err
		}
		return ParseNsPerCall(out)
	}
	for _, args := range [][]string{{"-o", "busy", "-b", "1000"}, {"-o", "stat", "-b", "1000"}, {"-o", "fork"}, {"-o", "exec", "-x", tiny}, {"-o", "spawn", "-x", tiny}} {
		ns, err := run(args...)
		if err != nil || !(ns > 0) {
			t.Errorf("percall %q: %v, %g ns per call", args, err, ns)
		}
	}
	for _, args := range [][]string{{"-o", "open", "-b", "10"}, {"-o", "exec"}, {"-o", "spawn"}, {"-o", "exec", "-x", "tiny"}, {"-o", "stat", "-x", tiny}, {"-o", "busy", "-b", "-1"}} {
		if _, err := run(args...); err == nil {
			t.Errorf("percall %q: want a usage error", args)
		}
	}
}

// TestBenchtimeCount: the gap benchmark's runs take -benchtime's count when
// it is one, and nothing from a duration.
func TestBenchtimeCount(t *testing.T) {
	f := flag.Lookup("test.benchtime")
	require.NotNil(t, f)
	old := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(old) })
	for v, want := range map[string]int{"20000x": 20000, "1x": 1, "2s": 0, "500ms": 0} {
		require.NoError(t, f.Value.Set(v))
		assert.Equal(t, want, benchtimeCount(), "-test.benchtime=%s", v)
	}
}
