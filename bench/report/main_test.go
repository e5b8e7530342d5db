package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
goarch: amd64
pkg: txexec/bench
cpu: Test CPU
BenchmarkPerCall/access/native-2         	    2000	      1000 ns/op	      1000 ns/call
BenchmarkPerCall/access/passthrough-2    	    2000	     20000 ns/op	     20000 ns/call
BenchmarkPerCall/access/tx-2             	    2000	     30000 ns/op	     30000 ns/call
BenchmarkPerCall/stat/native-2           	    2000	      1000 ns/op	      1000 ns/call
BenchmarkPerCall/stat/native-2           	    2000	      3000 ns/op	      3000 ns/call
BenchmarkPerCall/stat/native-2           	    2000	      2000 ns/op	      2000 ns/call
BenchmarkPerCall/stat/passthrough-2      	    2000	     20000 ns/op	     20000 ns/call
BenchmarkPerCall/stat/tx-2               	    2000	     20000 ns/op	     20000 ns/call
BenchmarkPerCall/open/native-2           	    2000	      4000 ns/op	      4000 ns/call
BenchmarkPerCall/open/passthrough-2      	    2000	     40000 ns/op	     40000 ns/call
BenchmarkPerCall/open/tx-2               	    2000	     40000 ns/op	     40000 ns/call
BenchmarkPerCall/unlink/native-2         	    2000	      4000 ns/op	      4000 ns/call
BenchmarkPerCall/unlink/passthrough-2    	    2000	     40000 ns/op	     40000 ns/call
BenchmarkPerCall/unlink/tx-2             	    2000	     40000 ns/op	     40000 ns/call
BenchmarkPerCall/link/native-2           	    2000	      4000 ns/op	      4000 ns/call
BenchmarkPerCall/link/passthrough-2      	    2000	     40000 ns/op	     40000 ns/call
BenchmarkPerCall/link/tx-2               	    2000	     40000 ns/op	     40000 ns/call
BenchmarkPerCall/link/tx-base-2          	    2000	     80000 ns/op	     80000 ns/call
BenchmarkPerCall/mkdir/native-2          	    2000	      4000 ns/op	      4000 ns/call
BenchmarkPerCall/mkdir/passthrough-2     	    2000	     40000 ns/op	     40000 ns/call
BenchmarkPerCall/mkdir/tx-2              	    2000	     40000 ns/op	     40000 ns/call
BenchmarkPerCall/read/native-2           	  100000	      1000 ns/op	      1000 ns/call
BenchmarkPerCall/read/passthrough-2      	  100000	      1000 ns/op	      1000 ns/call
BenchmarkPerCall/read/tx-2               	  100000	      1000 ns/op	      1000 ns/call
BenchmarkPerCall/read/filtered-2         	  100000	      1000 ns/op	      1000 ns/call
BenchmarkPerCall/write/native-2          	  100000	      1000 ns/op	      1000 ns/call
BenchmarkPerCall/write/passthrough-2     	  100000	      1000 ns/op	      1000 ns/call
BenchmarkPerCall/write/tx-2              	  100000	      1000 ns/op	      1000 ns/call
BenchmarkFloor/syncwake-2                	    2000	     10000 ns/op	     10000 ns/call
BenchmarkFloor/open-syncwake-2           	    2000	     50000 ns/op	     50000 ns/call
PASS
`

func TestParseMedians(t *testing.T) {
	r, err := Parse(strings.NewReader(sample), "sample")
	require.NoError(t, err)
	assert.Equal(t, "Test CPU", r.Header["cpu"])
	med, n, ok := r.Median("PerCall/stat/native", "ns/call")
	require.True(t, ok)
	assert.Equal(t, 3, n)
	assert.Equal(t, 2000.0, med)
	lo, hi := r.Spread("PerCall/stat/native", "ns/call")
	assert.Equal(t, [2]float64{1000, 3000}, [2]float64{lo, hi})
	assert.True(t, math.IsNaN(r.NsPerCall("PerCall/nothing/native")))
	assert.Equal(t, "PerCall/access/native", r.Order[0])
}

func TestParseRejectsMalformed(t *testing.T) {
	for _, in := range []string{
		"BenchmarkX-2  10  5 ns/op 7\n",
		"BenchmarkX-2  10  5 ns/op x ns/call\n",
		"BenchmarkX-2  10\n",
	} {
		_, err := Parse(strings.NewReader("goos: linux\n"+in), "out.txt")
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), "out.txt:2:", "the file and line")
	}
}

// TestParseLines: what one benchmark or configuration line becomes.
func TestParseLines(t *testing.T) {
	tests := []struct {
		name, in string
		samples  map[string]map[string][]float64
		header   map[string]string
	}{
		{"GOMAXPROCS suffix dropped", "BenchmarkPerCall/stat/tx-2  2000  100 ns/op  99 ns/call\n",
			map[string]map[string][]float64{"PerCall/stat/tx": {"ns/op": {100}, "ns/call": {99}}}, nil},
		{"no suffix with GOMAXPROCS=1", "BenchmarkBareNotifyStat  10  5 ns/op\n",
			map[string]map[string][]float64{"BareNotifyStat": {"ns/op": {5}}}, nil},
		{"only the last dash-number", "BenchmarkWorkload/lfs-large-16  1  7 ns/op\n",
			map[string]map[string][]float64{"Workload/lfs-large": {"ns/op": {7}}}, nil},
		{"units as printed, not benchfmt's base units", "BenchmarkWorkload/dpkg-2  1  4e+09 ns/op  1.5 install/native-s  52 install/durable-rss-MiB  3 MB/s\n",
			map[string]map[string][]float64{"Workload/dpkg": {"ns/op": {4e9}, "install/native-s": {1.5}, "install/durable-rss-MiB": {52}, "MB/s": {3}}}, nil},
		{"a zero value", "BenchmarkBlockedHandler-2  1  0 ns/op  1.32 cpu-%\n",
			map[string]map[string][]float64{"BlockedHandler": {"ns/op": {0}, "cpu-%": {1.32}}}, nil},
		{"configuration", "goos: linux\nworkload-true: `true`: starting txexec  \nBenchmarkX-2 1 1 ns/op\n",
			map[string]map[string][]float64{"X": {"ns/op": {1}}}, map[string]string{"goos": "linux", "workload-true": "`true`: starting txexec"}},
		{"a name go test printed before the benchmark's own output", "BenchmarkWorkload/true-2   \tworkload-true: true\nBenchmarkWorkload/true-2   \t\n",
			map[string]map[string][]float64{}, nil},
		{"history description and test log lines", "# Title: x\n    workload_test.go:12: bench: y\nok  \ttxexec/bench\t1.2s\n",
			map[string]map[string][]float64{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(strings.NewReader(tt.in), "out.txt")
			require.NoError(t, err)
			assert.Equal(t, tt.samples, r.Samples)
			if tt.header == nil {
				tt.header = map[string]string{}
			}
			assert.Equal(t, tt.header, r.Header)
		})
	}
}

func TestWrite(t *testing.T) {
	r, err := Parse(strings.NewReader(sample), "sample")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, Write(&b, r, nil, Machine{NProc: 2, CPU: "Test CPU", Kernel: "Linux test", Go: "go", BenchDir: "/dev/shm", BenchFS: "tmpfs", Load: "1, 1, 1"},
		time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)))
	out := b.String()
	// stat: median native 2 µs, 20 µs under both: 10× native, 2× the floor.
	assert.Contains(t, out, "| stat | stat(file) | 2.00 | 20.0 | 20.0 | 10.00 | 10.00 | 2.00 | 2.00 |")
	// open is compared with the ADDFD floor.
	assert.Contains(t, out, "| open | open(file, O_RDONLY) + close | 4.00 | 40.0 | 40.0 | 10.00 | 10.00 | 0.80 | 0.80 |")
	// write has no filtered run: its floor ratios are not made up.
	assert.Contains(t, out, "| write | write(fd, 4 KiB), sequential | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | — | — |")
	// Geomean over access 30, stat 10, open 10, unlink 10, link 10, mkdir 10, read 1, write 1.
	want := math.Exp((math.Log(30) + 5*math.Log(10)) / 8)
	assert.Contains(t, out, fmt.Sprintf("**%.2f×**", want))
	assert.Contains(t, out, "| link | tx | 80.0 | 40.0 | 0.50 |")
	assert.Contains(t, out, "Linux test")
	assert.Contains(t, out, "2026-01-02 03:04 UTC")
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "01-x.txt"), []byte("# Title one\n# why it helps\n"+sample), 0o644))
	steps, err := readHistory(dir)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	assert.Equal(t, "Title one", steps[0].Title)
	assert.Equal(t, []string{"why it helps"}, steps[0].Text)
	var b bytes.Buffer
	require.NoError(t, execute(&b, "steps", newSteps(steps)))
	assert.Contains(t, b.String(), "### 1. Title one")
	assert.Contains(t, b.String(), "| link | tx | 80.0 | 40.0 | 0.50 |")

	// rendered is how a history of one step with these benchmark lines
	// renders.
	rendered := func(lines string) string {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "01-x.txt"), []byte("# Title one\n"+lines), 0o644))
		steps, err := readHistory(dir)
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, execute(&b, "steps", newSteps(steps)))
		return b.String()
	}

	// Another benchmark's -base pair, reporting ns/call, renders as well.
	out := rendered("BenchmarkPreflight/renames-base-2 \t 40 \t 26000000 ns/op \t 13000 ns/call\n" +
		"BenchmarkPreflight/renames-2 \t 80 \t 13000000 ns/op \t 6500 ns/call\n")
	assert.Contains(t, out, "| Preflight | renames | 13.0 | 6.50 | 0.50 |")

	// BenchmarkSupervisorSyscalls's counts render in tables of their own.
	out = rendered("BenchmarkSupervisorSyscalls/open/tx-2 \t 1 \t 3000000000 ns/op \t 4.000 handler-syscalls/call \t 8.000 syscalls/call\n" +
		"BenchmarkSupervisorSyscalls/open/tx-base-2 \t 1 \t 3000000000 ns/op \t 5.000 handler-syscalls/call \t 10.00 syscalls/call\n")
	assert.Contains(t, out, "| call | mode | before: handler system calls per call | after | after / before |")
	assert.Contains(t, out, "| open | tx | 5.00 | 4.00 | 0.80 |")
	assert.Contains(t, out, "| open | tx | 10.00 | 8.00 | 0.80 |")
	assert.NotContains(t, out, "holds no -base measurements")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "02-bad.txt"), []byte(sample), 0o644))
	_, err = readHistory(dir)
	require.Error(t, err)
}

// TestParallelRuns: BenchmarkParallel's wall times render as speed-ups
// over the serial txexec runs and ratios to xargs -P 4; a list without
// its serial run is left out, and no run at all leaves no section.
func TestParallelRuns(t *testing.T) {
	in := "goos: linux\n" +
		"BenchmarkParallel/independent/serial-2 \t 1 \t 16000000000 ns/op\n" +
		"BenchmarkParallel/independent/xargs-P4-2 \t 1 \t 8000000000 ns/op\n" +
		"BenchmarkParallel/independent/parallel-j2-2 \t 1 \t 10000000000 ns/op\n" +
		"BenchmarkParallel/chain/parallel-j2-2 \t 1 \t 20000000000 ns/op\n"
	r, err := Parse(strings.NewReader(in), "out.txt")
	require.NoError(t, err)
	p := newParallelRuns(r)
	require.NotNil(t, p)
	assert.Equal(t, [][]string{
		{"independent", "`xargs -P 4`, natively", "8.0", "2.00", "1.00"},
		{"independent", "`txexec --` each, one after another", "16.0", "1.00", "2.00"},
		{"independent", "`txexec parallel -j2`", "10.0", "1.60", "1.25"},
	}, p.Rows)
	var b bytes.Buffer
	require.NoError(t, execute(&b, "report", &report{Parallel: p}))
	assert.Contains(t, b.String(), "| independent | `txexec parallel -j2` | 10.0 | 1.60 | 1.25 |")

	r, err = Parse(strings.NewReader(sample), "sample")
	require.NoError(t, err)
	assert.Nil(t, newParallelRuns(r))
}

// TestTwoCallers: the table has a row per gap; the worst ratio of two
// loops over one in the transaction is picked with the floor's beside it;
// the floor of a tree of two is the shared listener's overhead per call of
// either loop, interpolated between the gaps.
func TestTwoCallers(t *testing.T) {
	var in strings.Builder
	for _, l := range []struct {
		name string
		ns   float64
	}{{"0us/native-1", 1000}, {"0us/floor-1", 12000}, {"0us/native-2", 1000}, {"0us/floor-2", 12000}, {"0us/floor-shared-2", 25000}, {"0us/tx-1", 15000}, {"0us/tx-2", 27000},
		{"30us/native-1", 30000}, {"30us/floor-1", 40000}, {"30us/native-2", 30000}, {"30us/floor-2", 44000}, {"30us/floor-shared-2", 80000}, {"30us/tx-1", 45000}, {"30us/tx-2", 90000}} {
		fmt.Fprintf(&in, "BenchmarkTwoCallers/%s-2\t1\t%g ns/op\t%g ns/call\n", l.name, l.ns, l.ns)
	}
	r, err := Parse(strings.NewReader(in.String()), "out.txt")
	require.NoError(t, err)
	tc := newTwoCallers(r)
	require.NotNil(t, tc)
	require.Len(t, tc.Rows, 2)
	assert.Equal(t, []string{"30", "30.0", "30.0", "40.0", "44.0", "80.0", "45.0", "90.0", "1.00", "1.10", "2.00", "2.00", "1.20"}, tc.Rows[1])
	assert.InDelta(t, 2.0, tc.Tx, 1e-9)
	assert.InDelta(t, 2.0, tc.Shared, 1e-9)
	assert.InDelta(t, 1.1, tc.Apart, 1e-9)
	assert.Equal(t, "30", tc.TxGap)
	// (25000-1000)/2 at 0 µs, (80000-30000)/2 at 30 µs.
	assert.InDelta(t, 12000, tc.treeFloor(0), 1e-9)
	assert.InDelta(t, 12000+(25000-12000)/3.0, tc.treeFloor(10000), 1e-9)
	assert.InDelta(t, 25000, tc.treeFloor(60000), 1e-9)
	assert.True(t, math.IsNaN((*twoCallers)(nil).treeFloor(10000)))
	assert.Nil(t, newTwoCallers(&Results{}))
}
