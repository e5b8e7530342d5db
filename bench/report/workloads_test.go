package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// workloadSample is two rounds of BenchmarkWorkload output: the lines it
// prints before each benchmark, the benchmark lines (metrics sorted by
// name, as go test prints them) and a log line about a repeated run.
const workloadSample = `workload-true: ` + "`true`" + `: starting txexec
phases-true: true
goos: linux
pkg: txexec/bench
BenchmarkWorkload/true-2    1  30000000 ns/op  9.0 true/aci-rss-MiB  0.03 true/aci-s  0.0039 true/aci-staging-MiB  9.5 true/durable-rss-MiB  0.03 true/durable-s  0.0039 true/durable-staging-MiB  0.002 true/native+sync-s  0.001 true/native-s  8.0 true/passthrough-rss-MiB  0.02 true/passthrough-s
workload-build: make -j2 of C files
phases-build: make
BenchmarkWorkload/build-2   1  3000000000 ns/op  2.2 make/aci-cpu-s  2.6 make/durable-cpu-s  2 make/native-cpu-s  14 make/aci-rss-MiB  2.2 make/aci-s  0.5 make/aci-staging-MiB  15 make/durable-rss-MiB  3 make/durable-s  0.5 make/durable-staging-MiB  2.5 make/native+sync-s  2 make/native-s  1.8 make/passthrough+fast-s  12 make/passthrough-rss-MiB  2.4 make/passthrough-s
workload-dpkg: dpkg -i then -r of hello
phases-dpkg: install remove
BenchmarkWorkload/dpkg-2    1  4000000000 ns/op  1 apt-hello  50 install/aci-rss-MiB  4 install/aci-s  9 install/aci-staging-MiB  52 install/durable-rss-MiB  2 install/durable-s  1.2 install/durable+fast-s  9 install/durable-staging-MiB  1.5 install/native+sync-s  1 install/native-s  1.5 install/passthrough+fast-s  13 install/passthrough-rss-MiB  3 install/passthrough-s  55 remove/aci-rss-MiB  4 remove/aci-s  8 remove/aci-staging-MiB  49 remove/durable-rss-MiB  2 remove/durable-s  1.2 remove/durable+fast-s  8 remove/durable-staging-MiB  1.5 remove/native+sync-s  1 remove/native-s  1.5 remove/passthrough+fast-s  14 remove/passthrough-rss-MiB  3 remove/passthrough-s
--- BENCH: BenchmarkWorkload/dpkg-2
    workload_test.go:193: bench: remove (aci): exit status 75, retrying: txexec: transaction 2 aborted: conflict on /var/cache/man/index.db (changed on the host while the transaction read it)
PASS
goos: linux
BenchmarkWorkload/true-2    1  30000000 ns/op  9.0 true/aci-rss-MiB  0.03 true/aci-s  0.0039 true/aci-staging-MiB  9.5 true/durable-rss-MiB  0.03 true/durable-s  0.0039 true/durable-staging-MiB  0.002 true/native+sync-s  0.001 true/native-s  8.0 true/passthrough-rss-MiB  0.02 true/passthrough-s
BenchmarkWorkload/build-2   1  3000000000 ns/op  1.2 make/aci-cpu-s  1.4 make/durable-cpu-s  1 make/native-cpu-s  14 make/aci-rss-MiB  1.2 make/aci-s  0.5 make/aci-staging-MiB  15 make/durable-rss-MiB  1.5 make/durable-s  0.5 make/durable-staging-MiB  1.1 make/native+sync-s  1 make/native-s  1.1 make/passthrough+fast-s  12 make/passthrough-rss-MiB  1.3 make/passthrough-s
BenchmarkWorkload/dpkg-2    1  4000000000 ns/op  1 apt-hello  50 install/aci-rss-MiB  2 install/aci-s  9 install/aci-staging-MiB  70 install/durable-rss-MiB  2 install/durable-s  2.4 install/durable+fast-s  9 install/durable-staging-MiB  1.5 install/native+sync-s  2 install/native-s  3 install/passthrough+fast-s  13 install/passthrough-rss-MiB  3 install/passthrough-s  55 remove/aci-rss-MiB  2 remove/aci-s  8 remove/aci-staging-MiB  49 remove/durable-rss-MiB  2 remove/durable-s  2.4 remove/durable+fast-s  8 remove/durable-staging-MiB  1.5 remove/native+sync-s  2 remove/native-s  3 remove/passthrough+fast-s  14 remove/passthrough-rss-MiB  3 remove/passthrough-s
PASS
`

func TestWorkloadUnit(t *testing.T) {
	tests := []struct {
		unit             string
		phase, mode, qty string
		ok               bool
	}{
		{"install/native+sync-s", "install", "native+sync", "s", true},
		{"make/durable-rss-MiB", "make", "durable", "rss-MiB", true},
		{"make/native-cpu-s", "make", "native", "cpu-s", true},
		{"cp/aci-staging-MiB", "cp", "aci", "staging-MiB", true},
		{"make/durable-calls", "make", "durable", "calls", true},
		{"make/durable-commit-s", "make", "durable", "commit-s", true},
		{"make/native-cs", "make", "native", "cs", true},
		{"make/durable-migrations", "make", "durable", "migrations", true},
		{"make/durable-execs", "make", "durable", "execs", true},
		{"make/durable-forks", "make", "durable", "forks", true},
		{"make/durable-staged", "make", "durable", "staged", true},
		{"ns/op", "", "", "", false},
		{"apt-hello", "", "", "", false},
		{"x/-s", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.unit, func(t *testing.T) {
			phase, mode, qty, ok := workloadUnit(tt.unit)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, [3]string{tt.phase, tt.mode, tt.qty}, [3]string{phase, mode, qty})
		})
	}
}

func TestParseWorkloads(t *testing.T) {
	r, err := Parse(strings.NewReader(workloadSample), "workloadSample")
	require.NoError(t, err)
	assert.Equal(t, "dpkg -i then -r of hello", r.Header["workload-dpkg"])
	assert.NotContains(t, r.Header, "workload_test.go:193", "a log line is not a header")
	require.Len(t, r.Retries, 1)
	assert.Contains(t, r.Retries[0], "remove (aci): exit status 75, retrying")

	ws := r.Workloads()
	require.Len(t, ws, 3)
	// workloadDefs' order, not the output's.
	assert.Equal(t, []string{"true", "dpkg", "build"}, []string{ws[0].Name, ws[1].Name, ws[2].Name})
	d := ws[1]
	assert.Equal(t, "dpkg -i + -r", d.Title)
	assert.Equal(t, "1.1×", d.TxOS)
	assert.Equal(t, []string{"install", "remove"}, d.Phases, "the printed order, not the metrics' sorted one")
	assert.Equal(t, []string{"apt-hello"}, d.Flags)
	assert.Equal(t, []float64{1, 2}, d.Secs["install"]["native"])
	assert.Equal(t, 2, d.Rounds())

	assert.Equal(t, []float64{2, 4}, d.Total("native"))
	assert.Equal(t, []float64{8, 4}, d.Total("aci"))
	// Per round 8/2 and 4/4: the median of the ratios, 2.5, not the
	// ratio of the medians (6/3 = 2).
	assert.InDelta(t, 2.5, d.Ratio("", "aci", "native"), 1e-9)
	assert.InDelta(t, 2.5, d.Ratio("install", "aci", "native"), 1e-9, "4/1 and 2/2")

	peaks, phase := d.Peak(d.RSS, "durable")
	assert.Equal(t, []float64{52, 70}, peaks)
	assert.Equal(t, "install", phase)
	staging, phase := d.Peak(d.Staging, "aci")
	assert.Equal(t, []float64{9, 9}, staging)
	assert.Equal(t, "install", phase)
}

func TestNoisyVerdict(t *testing.T) {
	tests := []struct {
		median, best float64
		want, text   string
	}{
		{1.1, 1.2, "met", "**Met.**"},
		{1.3, 1.4, "not met", "**Not met.**"},
		{1.1, 1.4, "unclear", "**Unclear**: met by one of the median and best-times ratios, not the other — the machine's load varied too much during the run to tell."},
		{math.NaN(), 1.1, "unclear", "**Unclear**: met by one of the median and best-times ratios, not the other — the machine's load varied too much during the run to tell."},
		{math.NaN(), math.NaN(), "not met", "**Not met.**"}, // not measured is not met
	}
	for _, tt := range tests {
		v := noisyVerdict(tt.median, tt.best, 1.25)
		assert.Equal(t, tt.want, v, "%v, %v", tt.median, tt.best)
		var b bytes.Buffer
		require.NoError(t, execute(&b, "noisyVerdict", v))
		assert.Equal(t, tt.text, b.String())
	}
}

func TestRatioOf(t *testing.T) {
	assert.InDelta(t, 2.0, ratioOf([]float64{2, 6, 3}, []float64{1, 2, 3}), 1e-9, "median of 2, 3, 1")
	assert.InDelta(t, 2.0, ratioOf([]float64{4}, []float64{1, 3}), 1e-9, "unaligned: ratio of medians")
	assert.True(t, math.IsNaN(ratioOf(nil, []float64{1})))
}

func TestWriteWorkloads(t *testing.T) {
	r, err := Parse(strings.NewReader(workloadSample), "workloadSample")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, Write(&b, r, nil, Machine{NProc: 2, CPU: "Test CPU", WorkloadDir: "/var/tmp", WorkloadFS: "ext4 without a journal"}, time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)))
	out := b.String()
	// Times: medians over the two rounds.
	assert.Contains(t, out, "| dpkg -i + -r | install | 1.50 | 1.50 | 3.00 | 2.25 | 3.00 | 2.00 | 1.80 |\n")
	assert.Contains(t, out, "| **dpkg -i + -r** | **all** | 3.00 | 3.00 | 6.00 | 4.50 | 6.00 | 4.00 | 3.60 |\n")
	assert.Contains(t, out, "| parallel C build | make | 1.50 | 1.80 | 1.85 | 1.45 | 1.70 | 2.25 | — |\n")
	assert.Contains(t, out, "| empty transaction | true | 0.001 | 0.002 | 0.020 | — | 0.030 | 0.030 | — |\n", "a mode the run lacks")
	// Ratios: medians of per-round ratios, their range, best times
	// (dpkg durable 2 and 2 over native 1 and 2), CPU time.
	assert.Contains(t, out, "| dpkg -i + -r | install | 2.25 | 1.50 | 2.50 | 1.50 | 1.20 | 1.00–2.00 | 2.00 | 1.33 | — | — |  |")
	assert.Contains(t, out, "| **dpkg -i + -r** | **all** | 2.25 | 1.50 | 2.50 | 1.50 | 1.20 | 1.00–2.00 | 2.00 | 1.33 | — | — | 1.1× |")
	assert.Contains(t, out, "| parallel C build | make | 1.25 | 1.00 | 1.15 | 1.50 | — | 1.50–1.50 | 1.50 | 1.28 | 1.15 | 1.35 | 1.0–1.1× (make) |")
	// Memory: median / largest of the per-round peaks over the phases.
	assert.Contains(t, out, "| dpkg -i + -r | 14.0 / 14.0 | 55.0 / 55.0 | 61.0 / 70.0 | 9.0 / 9.0 | 9.0 / 9.0 | install |")
	// Targets: the build has no durable+fast run: 1.50× durable; RSS 70
	// MiB in one round.
	assert.Contains(t, out, "- Parallel C build ≤ 1.25× native: 1.50× durable without the fast path (durable+fast not measured; rounds 1.50–1.50, best times 1.50×, CPU time 1.35×),\n"+
		"  1.15× ACI (best times 1.20×), 1.25× passthrough. **Not met.**")
	// dpkg is judged on the default, durable+fast: 1.8 / 1.5 in each
	// round and phase.
	assert.Contains(t, out, "- dpkg -i + -r ≤ 1.50× native: 1.20× durable with the fast path (the default; rounds 1.20–1.20, best times 1.20×, CPU time —×),\n"+
		"  1.50× passthrough with it; without it 1.50× durable, 2.50× ACI (best times 2.00×), 2.25× passthrough. **Met.**")
	assert.Contains(t, out, "dpkg -i + -r 70.0 MiB, parallel C build 15.0 MiB. **Not met**")
	assert.NotContains(t, out, "Descriptor I/O ≤ 1.05× native, on whole LFS-large runs", "no lfs-large, no such target line")
	assert.Contains(t, out, "](perf-workloads.svg)")
	assert.NotContains(t, out, "](perf-percall.svg)", "no per-call data, no per-call plot")
	assert.Contains(t, out, "This report is from 2 rounds")
	assert.Contains(t, out, "1 timed run failed for another process and was run again")
	assert.Contains(t, out, "ext4 without a journal")
	assert.Contains(t, out, "| workloads and the 2000-file commit | temporary directories under /var/tmp (ext4 without a journal) |")
}

func TestPlots(t *testing.T) {
	r, err := Parse(strings.NewReader(sample+workloadSample), "sample")
	require.NoError(t, err)
	plots := Plots(r)
	require.Contains(t, plots, percallPlot)
	require.Contains(t, plots, workloadPlot)

	pc := plots[percallPlot]
	require.Len(t, pc.Groups, 8, "the sample's calls")
	assert.Equal(t, "stat", pc.Groups[1].Label)
	// stat: native 2 µs, 20 under both, the fstatat floor 10.
	assert.Equal(t, []float64{10, 10, 5}, pc.Groups[1].Values)

	wc := plots[workloadPlot]
	var labels []string
	for _, g := range wc.Groups {
		labels = append(labels, g.Label)
	}
	assert.Equal(t, []string{"true", "dpkg install", "dpkg remove", "dpkg all", "build make"}, labels)
	assert.InDelta(t, 1.5, wc.Groups[3].Values[2], 1e-9, "dpkg all, durable")

	for name, c := range plots {
		doc := parseSVG(t, c.Render())
		assert.Equal(t, strconv.Itoa(plotWidth), doc.Width, name)
		for _, g := range c.Groups {
			assert.Contains(t, doc.Texts, g.Label, name)
		}
		assert.Contains(t, doc.Texts, c.Title, name)
		// The background, the legend's swatches, at least two grid lines,
		// a bar per measured value, the line at native and the axis.
		bars := 0
		for _, g := range c.Groups {
			for _, v := range g.Values {
				if !math.IsNaN(v) {
					bars++
				}
			}
		}
		assert.GreaterOrEqual(t, doc.Rects, 1+len(c.Series)+2+bars+2, name)
		assert.Greater(t, doc.Height, float64(len(c.Groups)*barHeight), name)
	}
}

// svgDoc is what the tests read back of a plot.
type svgDoc struct {
	Width  string
	Height float64
	Texts  []string
	Rects  int
}

// parseSVG decodes doc as XML, failing the test on a syntax error, and
// returns its size, texts and number of rectangles.
func parseSVG(t *testing.T, doc []byte) svgDoc {
	t.Helper()
	var d svgDoc
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var text *string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "svg":
				for _, a := range tok.Attr {
					switch a.Name.Local {
					case "width":
						d.Width = a.Value
					case "height":
						d.Height, err = strconv.ParseFloat(a.Value, 64)
						require.NoError(t, err)
					}
				}
			case "rect":
				d.Rects++
			case "text":
				d.Texts = append(d.Texts, "")
				text = &d.Texts[len(d.Texts)-1]
			}
		case xml.CharData:
			if text != nil {
				*text += string(tok)
			}
		case xml.EndElement:
			text = nil
		}
	}
	return d
}

func TestRunWritesPlots(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "out.txt")
	require.NoError(t, os.WriteFile(in, []byte(sample+workloadSample), 0o644))
	out := filepath.Join(dir, "docs", "performance.md")
	require.NoError(t, os.Mkdir(filepath.Dir(out), 0o755))
	require.NoError(t, run(in, out, filepath.Join(dir, "no-history")))
	for _, name := range []string{percallPlot, workloadPlot} {
		b, err := os.ReadFile(filepath.Join(dir, "docs", name))
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(plotWidth), parseSVG(t, b).Width, name)
	}
	md, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(md), "](perf-percall.svg)")
}

func TestNiceStep(t *testing.T) {
	for _, tt := range []struct{ max, want float64 }{{1, 0.1}, {3.4, 0.5}, {9.7, 1}, {19.9, 2}, {45, 5}, {0, 1}} {
		assert.InDelta(t, tt.want, niceStep(tt.max), 1e-12, "max %v", tt.max)
	}
	assert.Equal(t, "0.5", formatTick(0.5, 0.5))
	assert.Equal(t, "12", formatTick(12, 2))
}

func TestParseFailures(t *testing.T) {
	const out = `phases-build: make
--- FAIL: BenchmarkWorkload/build
    workload_test.go:208: bench: txexec --no-durable -- make -j2 -s: exit status 2
        /usr/include/stdlib.h:587:11: fatal error: /usr/include/alloca.h: No such process
        make: *** [Makefile:8: m40.o] Error 1
--- FAIL: BenchmarkWorkload
FAIL
BenchmarkWorkload/rab-2  1  5 ns/op  1 mkdir/native-s
`
	r, err := Parse(strings.NewReader(out), "out.txt")
	require.NoError(t, err)
	require.Len(t, r.Failures, 1, "the parent, which logged nothing, is not one")
	assert.Equal(t, "Workload/build", r.Failures[0].Name)
	assert.Len(t, r.Failures[0].Lines, 3)
	assert.NotContains(t, r.Header, "make", "a failure's lines are not headers")
	assert.Equal(t, []float64{1}, r.Samples["Workload/rab"]["mkdir/native-s"])

	r2, err := Parse(strings.NewReader("panic: runtime error: index out of range\n\ngoroutine 1 [running]:\n"), "out.txt")
	require.NoError(t, err)
	require.Len(t, r2.Failures, 1)
	assert.Equal(t, []string{"panic: runtime error: index out of range"}, r2.Failures[0].Lines)

	// A failure after the benchmark's first run follows its name.
	r3, err := Parse(strings.NewReader("BenchmarkPerCall/stat/tx-2   \t--- FAIL: BenchmarkPerCall/stat/tx-2\n"+
		"    percall_test.go:80: txexec: exit status 1\nBenchmarkPerCall/open/tx-2  \tpanic: boom\n"), "out.txt")
	require.NoError(t, err)
	require.Len(t, r3.Failures, 2)
	assert.Equal(t, Failure{Name: "PerCall/stat/tx-2", Lines: []string{"percall_test.go:80: txexec: exit status 1"}}, r3.Failures[0])
	assert.Equal(t, []string{"panic: boom"}, r3.Failures[1].Lines)

	var b bytes.Buffer
	require.NoError(t, execute(&b, "failures", r.Failures))
	assert.Contains(t, b.String(), "## Failed benchmarks")
	assert.Contains(t, b.String(), "- BenchmarkWorkload/build:")
	assert.Contains(t, b.String(), "  /usr/include/stdlib.h:587:11: fatal error: /usr/include/alloca.h: No such process\n")
}

// TestCallBudget: the trapped-call table multiplies each phase's calls by
// what the floor adds to a call, and is left out when no run counted calls.
func TestCallBudget(t *testing.T) {
	in := "phases-build: make\nBenchmarkWorkload/build-2 1 2000000000 ns/op 100000 make/durable-calls 2 make/durable-s 1 make/native-s\n" +
		"BenchmarkWorkload/build-2 1 2000000000 ns/op 100000 make/durable-calls 2 make/durable-s 1 make/native-s\n"
	r, err := Parse(strings.NewReader(in), "in.txt")
	require.NoError(t, err)
	var out bytes.Buffer
	// 11 µs floor, 1 µs native: 100000 calls cost 1 s, native 1 s → 2.00.
	require.NoError(t, execute(&out, "callBudget", newCallBudget(r.Workloads(), 11000, 1000)))
	assert.Contains(t, out.String(), "| parallel C build | make | 100000 | 1.00 | 2.00 | 1.00 | 1.00 | 2.00 | 2.00 |")

	r, err = Parse(strings.NewReader(workloadSample), "workloadSample")
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, execute(&out, "callBudget", newCallBudget(r.Workloads(), 11000, 1000)))
	assert.Empty(t, out.String())
}

// TestWorkloadTargetAgainstFloor: a workload target is compared with what
// the round trips of the workload's trapped calls alone would give
// (native + calls × (floor − native fstatat)), all phases summed.
func TestWorkloadTargetAgainstFloor(t *testing.T) {
	const sample = `workload-build: make
phases-build: make
BenchmarkWorkload/build-2   1  3000000000 ns/op  100000 make/durable-calls  3 make/durable-s  2 make/native-s  1 make/aci-s  1 make/passthrough-s
workload-dpkg: dpkg
phases-dpkg: install remove
BenchmarkWorkload/dpkg-2    1  4000000000 ns/op  30000 install/durable-calls  4 install/durable-s  1 install/native-s  20000 remove/durable-calls  4 remove/durable-s  1 remove/native-s  1 install/aci-s  1 remove/aci-s  1 install/passthrough-s  1 remove/passthrough-s
`
	r, err := Parse(strings.NewReader(sample), "sample")
	require.NoError(t, err)
	ws := r.Workloads()
	build := findWorkload(ws, "build")
	require.NotNil(t, build)
	// 100,000 calls × 10 µs = 1 s over 2 s native.
	fr, calls, _, ok := build.floorRatio("", 10e-6)
	require.True(t, ok)
	assert.InDelta(t, 1.5, fr, 1e-9)
	assert.Equal(t, 100000.0, calls)
	dpkg := findWorkload(ws, "dpkg")
	fr, calls, _, ok = dpkg.floorRatio("", 10e-6)
	require.True(t, ok)
	assert.InDelta(t, 1.25, fr, 1e-9, "50,000 calls × 10 µs over 2 s native")
	assert.Equal(t, 50000.0, calls)

	var b bytes.Buffer
	require.NoError(t, execute(&b, "workloadTargets", newWorkloadTargets(ws, 12000, 2000))) // the floor adds 10 µs
	out := b.String()
	assert.Contains(t, out, "The round trips of its 100000 trapped calls alone, at the floor, would make it 1.50× native:\n"+
		"  the target is out of reach of any supervisor that traps these calls on this machine.")
	assert.Contains(t, out, "The round trips of its 50000 trapped calls alone, at the floor, would make it 1.25× native, leaving 0.25× of native for all of txexec's own work.")

	b.Reset()
	require.NoError(t, execute(&b, "workloadTargets", newWorkloadTargets(ws, 2000, 2000))) // no floor measured above native
	assert.NotContains(t, b.String(), "round trips")
}
