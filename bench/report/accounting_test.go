package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gapSample is BenchmarkFloorGap at two gaps: the floor adds 10 µs and
// 12 µs, passthrough 12 µs and 16 µs, a transaction 11 µs and 14 µs.
const gapSample = `switch-counter: perf events
BenchmarkFloorGap/0us/gap-2           2000  1 ns/call
BenchmarkFloorGap/0us/native-2        2000  1000 ns/call  0.01 cs/call  0 migrations/call
BenchmarkFloorGap/0us/floor-native-2  2000  2000 ns/call  0.02 cs/call  0 migrations/call
BenchmarkFloorGap/0us/floor-2         2000  12000 ns/call  2.0 cs/call  0.01 migrations/call
BenchmarkFloorGap/0us/passthrough-2   2000  13000 ns/call  2.2 cs/call  -0.01 migrations/call
BenchmarkFloorGap/0us/tx-2            2000  12000 ns/call  2.1 cs/call  0.02 migrations/call  5000 handle-ns/call
BenchmarkFloorGap/20us/gap-2          2000  20001 ns/call
BenchmarkFloorGap/20us/native-2       2000  21000 ns/call  0.01 cs/call  0 migrations/call
BenchmarkFloorGap/20us/floor-native-2 2000  22000 ns/call  0.02 cs/call  0 migrations/call
BenchmarkFloorGap/20us/floor-2        2000  34000 ns/call  2.0 cs/call  0 migrations/call
BenchmarkFloorGap/20us/passthrough-2  2000  37000 ns/call  2.4 cs/call  0 migrations/call
BenchmarkFloorGap/20us/tx-2           2000  35000 ns/call  2.3 cs/call  0 migrations/call  7000 handle-ns/call
`

func TestFloorGaps(t *testing.T) {
	r, err := Parse(strings.NewReader(gapSample), "gapSample")
	require.NoError(t, err)
	fg := newFloorGaps(r)
	require.NotNil(t, fg)
	assert.Equal(t, [][]string{
		{"0", "0.00", "1.00", "10.0", "12.0", "11.0", "1.20", "1.10", "0.01 / 2.00 / 2.20 / 2.10", "0.00 / 0.01 / 0.00 / 0.02"},
		{"20", "20.0", "21.0", "12.0", "16.0", "14.0", "1.33", "1.17", "0.01 / 2.00 / 2.40 / 2.30", "0.00 / 0.00 / 0.00 / 0.00"},
	}, fg.Rows)
	assert.False(t, fg.Met, "passthrough at 20 µs is 1.33× the floor")
	assert.InDelta(t, 16.0/12, fg.Worst, 1e-9)
	assert.Equal(t, "20", fg.WorstGap)
	assert.Equal(t, "passthrough", fg.WorstMode)

	tx := func(p gapPoint) float64 { return p.Tx }
	assert.InDelta(t, 11000, fg.at(0, tx), 1e-6, "at the first gap")
	assert.InDelta(t, 12500, fg.at(10000, tx), 1e-6, "half way between the nominal gaps")
	assert.InDelta(t, 14000, fg.at(1e6, tx), 1e-6, "held beyond the last gap")
	assert.True(t, math.IsNaN((*floorGaps)(nil).at(5, tx)))

	var b bytes.Buffer
	require.NoError(t, execute(&b, "floorGaps", fg))
	assert.Contains(t, b.String(), "counted by the kernel's perf events (see Method)")
	assert.Contains(t, b.String(), "**not met**: 1.33× passthrough at the 20 µs gap.")

	// Without perf: switches from rusage, no migrations column.
	noPerf := strings.NewReplacer("switch-counter: perf events", "switch-counter: getrusage (no perf in PATH)", "migrations/call", "x/call").Replace(gapSample)
	r, err = Parse(strings.NewReader(noPerf), "noPerf")
	require.NoError(t, err)
	fg = newFloorGaps(r)
	require.NotNil(t, fg)
	assert.False(t, fg.Migrations)
	assert.Len(t, fg.Rows[0], 9)
	b.Reset()
	require.NoError(t, execute(&b, "floorGaps", fg))
	assert.Contains(t, b.String(), "getrusage (no perf in PATH): the kernel's perf events could not be opened here, so switches come from wait4's rusage of the tree and migrations are not counted.")
	assert.NotContains(t, b.String(), "migrations per call")

	r, err = Parse(strings.NewReader(sample), "sample")
	require.NoError(t, err)
	assert.Nil(t, newFloorGaps(r), "no BenchmarkFloorGap in the run")
}

// accountingSample: the build's 2 s over 1 s native, with 100,000 trapped
// calls at a gap of 10 µs (1 s native CPU), 100 execs, 200 forks and
// 0.05 s of commit, 0.9 s in handlers, 1,000 descriptor replies and 2 s
// of supervisor CPU; an empty transaction 0.02 s over native with a
// 0.01 s commit; a fork 100 µs over native, an exec 300 µs (200 µs
// beyond its fork); the floor's open 38 µs over native, its stat 11 µs;
// two loops at one listener 20 µs over two native ones at no gap and 40
// µs at 20 µs (a tree of two: 10 and 20 µs per call of either).
const accountingSample = gapSample + `BenchmarkTwoCallers/0us/native-2-2  1  1000 ns/call
BenchmarkTwoCallers/0us/floor-shared-2-2  1  21000 ns/call
BenchmarkTwoCallers/20us/native-2-2  1  21000 ns/call
BenchmarkTwoCallers/20us/floor-shared-2-2  1  61000 ns/call
BenchmarkPerCall/open/native-2   2000  2000 ns/call
BenchmarkPerCall/open/floor-2    2000  40000 ns/call
BenchmarkPerCall/stat/native-2   2000  1000 ns/call
BenchmarkPerCall/stat/floor-2    2000  12000 ns/call
BenchmarkPerCall/fork/native-2   2000  100000 ns/call
BenchmarkPerCall/fork/tx-2       2000  200000 ns/call
BenchmarkPerCall/exec/native-2   2000  100000 ns/call
BenchmarkPerCall/exec/tx-2       2000  400000 ns/call
workload-true: true
phases-true: true
BenchmarkWorkload/true-2  1  1 ns/op  0.001 true/native-s  0.021 true/durable-s  5 true/durable-calls  0.01 true/durable-commit-s  1 true/durable-execs  0 true/durable-forks  0.001 true/native-cpu-s
workload-build: make
phases-build: make
jobs-build: 2
BenchmarkWorkload/build-2 1 1 ns/op 1 make/native-s 3 make/durable-s 1 make/native-cpu-s 100000 make/durable-calls 100 make/durable-execs 200 make/durable-forks 0.06 make/durable-commit-s 30000 make/native-cs 240000 make/durable-cs 100 make/native-migrations 5000 make/durable-migrations 1000 make/durable-fdreplies 0.9 make/durable-handle-s 2 make/durable-supcpu-s
`

func TestAccounting(t *testing.T) {
	r, err := Parse(strings.NewReader(accountingSample), "accountingSample")
	require.NoError(t, err)
	ws := r.Workloads()
	require.Equal(t, 2, findWorkload(ws, "build").Jobs, "its jobs-build line")
	a := newAccounting(r, ws, newFloorGaps(r), newTwoCallers(r))
	require.NotNil(t, a)
	assert.InDelta(t, 100000, a.Fork, 1e-6)
	assert.InDelta(t, 200000, a.Exec, 1e-6)
	assert.InDelta(t, 0.02, a.Fixed, 1e-9)
	// Overhead 2 s: calls 100,000 × 12.5 µs (the transaction's overhead
	// half way between 0 and 20 µs) = 1.25 s, handlers 0.9 s less
	// 100,000 × 6 µs (the loop's handler at 10 µs) = 0.3 s, descriptor
	// replies 1,000 × 27 µs (38 − 11) = 0.027 s, execs 0.02 s, forks
	// 0.02 s, fixed 0.02 s, write-through 0.06 − 0.01 = 0.05 s: 0.313 s
	// left.
	assert.InDelta(t, 27000, a.FDExtra, 1e-6)
	assert.True(t, a.Handlers)
	assert.Equal(t, [][]string{{"parallel C build", "1.00", "2.00", "1.25 (100000 × 12.5 µs)", "0.30", "0.027 (1000 × 27.0 µs)",
		"0.020 (100 × 200 µs)", "0.020 (200 × 100 µs)", "0.020 (1 × 0.020 s)", "0.050", "0.31", "16%"}}, a.Rows)
	// 20 µs per trapped call against the floor's 11 µs at a 10 µs gap;
	// 1% of the calls answered with a descriptor make the floor of the mix
	// 11 + 0.01 × 27 = 11.27 µs, and the floor of a tree of two 15 (half
	// way between 10 and 20) + 0.27 = 15.27 µs; 2 s of supervisor CPU
	// over 100,000 calls.
	assert.Equal(t, [][]string{{"parallel C build", "10.0", "20.0", "11.0", "1.82", "1%", "11.3", "1.77", "15.3", "1.31", "20.0"}}, a.Effective)
	require.Len(t, a.Targets, 1)
	assert.False(t, a.Targets[0].Met)
	assert.InDelta(t, 20/15.27, a.Targets[0].Tree, 1e-9)
	assert.InDelta(t, 11.27/11, a.Targets[0].MixFloor, 1e-9, "the floor of the mix over the stat floor")

	sw := newWorkloadSwitches(ws, r.Header["switch-counter"])
	require.NotNil(t, sw)
	assert.Equal(t, []string{"parallel C build", "make", "100000", "30000", "240000", "0.30", "2.40", "0.00", "0.05"}, sw.Rows[0])
	require.Len(t, sw.Targets, 1)
	assert.False(t, sw.Targets[0].Met, "2.4 switches per trapped call")

	// A run from before the handlers and descriptor replies were counted:
	// their cells are dashes and they explain nothing.
	old, err := Parse(strings.NewReader(strings.NewReplacer(" 1000 make/durable-fdreplies 0.9 make/durable-handle-s 2 make/durable-supcpu-s", "",
		"  5000 handle-ns/call", "", "  7000 handle-ns/call", "").Replace(accountingSample)), "old")
	require.NoError(t, err)
	a = newAccounting(old, old.Workloads(), newFloorGaps(old), newTwoCallers(old))
	require.NotNil(t, a)
	assert.False(t, a.Handlers)
	assert.Equal(t, []string{"—", "—"}, a.Rows[0][4:6])
	assert.Equal(t, "0.64", a.Rows[0][10], "0.313 + 0.3 + 0.027")
	assert.Equal(t, []string{"—", "—", "—", "—", "—", "—"}, a.Effective[0][5:])

	// A workload that does not say it runs two jobs at once is not
	// compared with the floor of a tree of two.
	oneJob, err := Parse(strings.NewReader(strings.Replace(accountingSample, "jobs-build: 2\n", "", 1)), "oneJob")
	require.NoError(t, err)
	require.Equal(t, 1, findWorkload(oneJob.Workloads(), "build").Jobs)
	a = newAccounting(oneJob, oneJob.Workloads(), newFloorGaps(oneJob), newTwoCallers(oneJob))
	require.NotNil(t, a)
	assert.Equal(t, []string{"—", "—"}, a.Effective[0][8:10])
	assert.True(t, math.IsNaN(a.Targets[0].Tree))

	// Without the fork and exec units, no table.
	noUnits, err := Parse(strings.NewReader(strings.ReplaceAll(accountingSample, "PerCall/fork", "PerCall/other")), "noUnits")
	require.NoError(t, err)
	assert.Nil(t, newAccounting(noUnits, noUnits.Workloads(), newFloorGaps(noUnits), newTwoCallers(noUnits)))
}

// TestFloorGapsNoise: a floor overhead that noise made negative gives no
// ratio, and the target is then not met; the rows stay in the order of the
// nominal gaps whatever the measured ones.
func TestFloorGapsNoise(t *testing.T) {
	noisy := strings.NewReplacer("20us/floor-2        2000  34000", "20us/floor-2        2000  21000",
		"20us/gap-2          2000  20001", "20us/gap-2          2000  0.5").Replace(gapSample)
	r, err := Parse(strings.NewReader(noisy), "noisy")
	require.NoError(t, err)
	fg := newFloorGaps(r)
	require.NotNil(t, fg)
	assert.Equal(t, []string{"0", "20"}, []string{fg.Rows[0][0], fg.Rows[1][0]})
	assert.Equal(t, []string{"-1.00", "—", "—"}, []string{fg.Rows[1][3], fg.Rows[1][6], fg.Rows[1][7]})
	assert.False(t, fg.Met)
	assert.Equal(t, []int{20}, fg.NoRatio)
	var b bytes.Buffer
	require.NoError(t, execute(&b, "floorGaps", fg))
	assert.Contains(t, b.String(), "At the gaps of 20 µs the floor's overhead came out nil or negative")
}

// TestEffectiveTargetOutOfReach: the target line says when the floor of a
// workload's own mix of calls is itself above the target, and only then.
func TestEffectiveTargetOutOfReach(t *testing.T) {
	line := func(mixFloor float64) string {
		var b bytes.Buffer
		rep := &report{Accounting: &accounting{Targets: []effectiveTarget{{Title: "dpkg", PerCall: 28000, Floor: 11000, Ratio: 2.5,
			Mix: 1.04, Tree: math.NaN(), MixFloor: mixFloor, Target: 1.5}}}}
		require.NoError(t, execute(&b, "issue17Targets", rep))
		return b.String()
	}
	assert.Contains(t, line(2.41), "The floor of this mix is itself 2.41× the stat floor")
	assert.NotContains(t, line(1.2), "The floor of this mix")
	assert.NotContains(t, line(math.NaN()), "The floor of this mix")
}
