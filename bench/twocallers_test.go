package bench

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TwoCallersGapsUS are the gaps of BenchmarkTwoCallers, in µs: none, and
// around the C build's native CPU time per trapped call (about 22 µs).
var TwoCallersGapsUS = []int{0, 10, 30}

// twoCallersCalls is the number of timed calls each loop makes.
const twoCallersCalls = 8000

// twoCallersRounds is how many rounds of runs make a mode's time: their
// median (as gapSamples).
const twoCallersRounds = 3

// BenchmarkTwoCallers times the stat loop of BenchmarkFloorGap made by one
// process, and by two processes at once, each with its own file and the
// same gap: natively, under the bare C supervisor (two loops: two
// supervisors, one for each, floor-2; or one supervisor whose one listener
// both loops' calls reach, floor-shared-2, the loops on the same file) and
// in one transaction of txexec without the fast path (two loops: both
// processes in the one tree, served by its one listener). On a machine of
// two or more CPUs two native loops, and two loops each with its own C
// supervisor, take about the time of one; what two loops under one
// listener take over one says how much of its service the processes get in
// parallel: 2.0 is none. The modes take turns within each round; a mode's
// time per call is the median of its rounds, of the mean of its loops.
//
// Metric: ns/call.
func BenchmarkTwoCallers(b *testing.B) {
	bin := BuildPercall(b)
	perUS := busyItersPerUS(b, bin)
	modes := twoCallersModes(bin)
	for _, g := range TwoCallersGapsUS {
		iters := int(math.Round(float64(g) * perUS))
		b.Run(fmt.Sprintf("%dus", g), func(b *testing.B) {
			samples := make([][]float64, len(modes))
			for range twoCallersRounds {
				for i, m := range modes {
					samples[i] = append(samples[i], twoCallersRun(b, m, iters))
				}
			}
			for i, m := range modes {
				b.Run(m.name, func(b *testing.B) {
					ns := median(slices.Clone(samples[i]))
					b.ReportMetric(ns, "ns/op")
					b.ReportMetric(ns, "ns/call")
				})
			}
		})
	}
}

// twoCallersMode is one way of running the loops: the commands argv
// returns for dirs work directories, run at once (one per loop, or one
// txexec for both). They print one ns_per_call line for each directory:
// one per loop, or, for the bare supervisor of two, whose loops stat the
// file of its one directory, their mean.
type twoCallersMode struct {
	name string
	dirs int
	argv func(tb testing.TB, iters int, dirs []string) [][]string
}

func twoCallersModes(percall string) []twoCallersMode {
	loop := func(dir string, iters int) []string {
		return append(PercallArgs(percall, "stat", dir, twoCallersCalls), "-b", strconv.Itoa(iters))
	}
	each := func(prefix func(tb testing.TB) []string, args func(dir string, iters int) []string) func(tb testing.TB, iters int, dirs []string) [][]string {
		return func(tb testing.TB, iters int, dirs []string) [][]string {
			var out [][]string
			for _, d := range dirs {
				out = append(out, append(prefix(tb), args(d, iters)...))
			}
			return out
		}
	}
	none := func(testing.TB) []string { return nil }
	floor := func(dir string, iters int) []string {
		return []string{"-n", strconv.Itoa(twoCallersCalls), "-b", strconv.Itoa(iters), "-f", filepath.Join(dir, "file"), "-s"}
	}
	floorBin := func(tb testing.TB) []string { return []string{floorBinary(tb)} }
	tx := func(tb testing.TB) []string { return served(txexecBinary(tb)) }
	// txBoth runs every loop in one transaction: a shell starts them and
	// fails if any does.
	txBoth := func(tb testing.TB, iters int, dirs []string) [][]string {
		var script strings.Builder
		for i := range dirs {
			fmt.Fprintf(&script, `"$0" -o stat -d "$%d" -n %d -b %d & p%d=$!; `, i+1, twoCallersCalls, iters, i)
		}
		for i := range dirs {
			fmt.Fprintf(&script, `wait $p%d || exit 1; `, i)
		}
		return [][]string{append(append(tx(tb), "sh", "-c", script.String(), percall), dirs...)}
	}
	var modes []twoCallersMode
	for _, callers := range []int{1, 2} {
		modes = append(modes,
			twoCallersMode{name: fmt.Sprintf("native-%d", callers), dirs: callers, argv: each(none, loop)},
			twoCallersMode{name: fmt.Sprintf("floor-%d", callers), dirs: callers, argv: each(floorBin, floor)})
	}
	// floor-shared-2: one bare supervisor, whose one listener both
	// loops' calls reach, as a tree's reach txexec's (notify_floor -2).
	shared := func(tb testing.TB, iters int, dirs []string) [][]string {
		return [][]string{append([]string{floorBinary(tb)}, append(floor(dirs[0], iters), "-2")...)}
	}
	modes = append(modes,
		twoCallersMode{name: "floor-shared-2", dirs: 1, argv: shared},
		twoCallersMode{name: "tx-1", dirs: 1, argv: each(tx, loop)},
		twoCallersMode{name: "tx-2", dirs: 2, argv: txBoth})
	return modes
}

// twoCallersRun runs mode m once and returns the mean of its loops' times
// per call.
func twoCallersRun(tb testing.TB, m twoCallersMode, iters int) float64 {
	tb.Helper()
	dirs := make([]string, m.dirs)
	for i := range dirs {
		dirs[i] = WorkDir(tb)
	}
	argvs := m.argv(tb, iters, dirs)
	cmds := make([]*exec.Cmd, len(argvs))
	outs := make([]bytes.Buffer, len(argvs))
	errs := make([]bytes.Buffer, len(argvs))
	for i, argv := range argvs {
		cmd, _ := StateCommand(tb, argv...)
		cmd.Stdout, cmd.Stderr = &outs[i], &errs[i]
		if err := cmd.Start(); err != nil {
			tb.Fatalf("bench: %s: %v", strings.Join(argv, " "), err)
		}
		cmds[i] = cmd
	}
	var all []float64
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			tb.Fatalf("bench: %s: %v\n%s", strings.Join(cmd.Args, " "), err, errs[i].String())
		}
		ns, err := parseNsPerCallLines(outs[i].Bytes())
		if err != nil {
			tb.Fatalf("%v (stderr: %s)", err, errs[i].String())
		}
		all = append(all, ns...)
	}
	if len(all) != m.dirs {
		tb.Fatalf("bench: %s: %d times reported, want %d", m.name, len(all), m.dirs)
	}
	var sum float64
	for _, v := range all {
		sum += v
	}
	return sum / float64(len(all))
}

// parseNsPerCallLines reads one "ns_per_call=" line per loop of a run (the
// loops of one transaction share its output).
func parseNsPerCallLines(out []byte) ([]float64, error) {
	var vs []float64
	for line := range strings.Lines(string(out)) {
		v, err := ParseNsPerCall([]byte(line))
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("bench: no ns_per_call line in %q", out)
	}
	return vs, nil
}

// TestParseNsPerCallLines: a run of two loops in one transaction gives both
// times; anything else in the output is an error.
func TestParseNsPerCallLines(t *testing.T) {
	vs, err := parseNsPerCallLines([]byte("ns_per_call=1000.5\nns_per_call=2000\n"))
	require.NoError(t, err)
	assert.Equal(t, []float64{1000.5, 2000}, vs)
	for _, bad := range []string{"", "ns_per_call=1\nnoise\n", "x=1\n"} {
		_, err := parseNsPerCallLines([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}
