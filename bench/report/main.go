// Command report turns the output of txexec's Go benchmarks (`go test
// -bench` on ./bench/...) into docs/performance.md: the per-call table in
// the style of TxOS (SOSP'09) Table 4, the bare seccomp-notify floor
// measured in the same run, the ratios against native and against the
// floor, the floor with gaps of CPU work between calls, the example mail
// server with transactions begun by the program against flock, the
// workloads (whole programs) with the supervisor's memory and staging disk
// use, their context switches per trapped call and the accounting of their
// overhead (per trapped call, exec, fork, commit), the targets of issues 7
// and 17 and whether they are met, the machine and the method, and the record of optimizations kept in
// bench/history. Next to the Markdown file it draws the ratios as SVG bar
// charts (perf-percall.svg, perf-workloads.svg).
//
//	go run ./bench/report -in bench/out.txt -o docs/performance.md
//
// Every number in the generated files comes from -in or from the recorded
// benchmark outputs in -history; nothing is typed in by hand. The prose is
// report.md.tmpl; report.go computes what it shows, parse.go reads the
// benchmark output (golang.org/x/perf/benchfmt) and plot.go draws.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	in := flag.String("in", "bench/out.txt", "output of go test -bench")
	out := flag.String("o", "docs/performance.md", "Markdown file to write")
	history := flag.String("history", "bench/history", "directory of recorded before/after benchmark outputs")
	flag.Parse()
	if err := run(*in, *out, *history); err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
}

func run(in, out, history string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := Parse(f, in)
	if err != nil {
		return err
	}
	if len(res.Samples) == 0 {
		return fmt.Errorf("%s: no benchmark results", in)
	}
	steps, err := readHistory(history)
	if err != nil {
		return err
	}
	for name, c := range Plots(res) {
		if err := os.WriteFile(filepath.Join(filepath.Dir(out), name), c.Render(), 0o644); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if err := Write(&b, res, steps, machine(), time.Now().UTC()); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// The plots' file names, next to the Markdown file.
const (
	percallPlot  = "perf-percall.svg"
	workloadPlot = "perf-workloads.svg"
)

// Plots returns the charts the results have data for, by file name.
func Plots(r *Results) map[string]*barChart {
	plots := map[string]*barChart{}
	if c := percallChart(r); len(c.Groups) > 0 {
		plots[percallPlot] = c
	}
	if ws := r.Workloads(); len(ws) > 0 {
		plots[workloadPlot] = workloadChart(ws)
	}
	return plots
}

// percallChart is the per-call table's ratios to native, its floor's too.
func percallChart(r *Results) *barChart {
	c := &barChart{Title: "Per call: time / native (medians)", Series: []string{"passthrough", "in a transaction", "floor"}, Ref: 1}
	for _, op := range append(slices.Clone(txosOps), extraOps...) {
		nat := r.NsPerCall("PerCall/" + op + "/native")
		pt, tx := r.NsPerCall("PerCall/"+op+"/passthrough")/nat, r.NsPerCall("PerCall/"+op+"/tx")/nat
		if math.IsNaN(pt) && math.IsNaN(tx) {
			continue
		}
		c.Groups = append(c.Groups, barGroup{Label: op, Values: []float64{pt, tx, floorFor(r, op) / nat}})
	}
	return c
}

// floorFor is the floor the per-call table compares op with: the bare C
// supervisor emulating fstatat, or installing a descriptor for open and
// create; for read and write, the native loop under an allow-all filter.
// A listing is several calls: it has no floor of its own.
func floorFor(r *Results, op string) float64 {
	switch {
	case op == "listdir":
		return math.NaN()
	case op == "open" || op == "create":
		return r.firstOf("PerCall/open/floor", "Floor/open-syncwake")
	case fdOps[op]:
		return r.NsPerCall("PerCall/" + op + "/filtered")
	}
	return r.firstOf("PerCall/stat/floor", "Floor/syncwake")
}

// Median returns the median of the named benchmark's metric, the number of
// samples, and whether there was any.
func (r *Results) Median(name, unit string) (float64, int, bool) {
	vs := r.Samples[name][unit]
	if len(vs) == 0 {
		return 0, 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], n, true
	}
	return (s[n/2-1] + s[n/2]) / 2, n, true
}

// firstOf is the median ns/call of the first of names that was measured.
func (r *Results) firstOf(names ...string) float64 {
	for _, n := range names {
		if v := r.NsPerCall(n); !math.IsNaN(v) {
			return v
		}
	}
	return math.NaN()
}

// Spread returns the smallest and largest sample.
func (r *Results) Spread(name, unit string) (lo, hi float64) {
	vs := r.Samples[name][unit]
	return slices.Min(vs), slices.Max(vs)
}

// NsPerCall is the median ns/call of a benchmark, or NaN.
func (r *Results) NsPerCall(name string) float64 { return r.MedianOrNaN(name, "ns/call") }

// MedianOrNaN is the median of a benchmark's metric unit, or NaN.
func (r *Results) MedianOrNaN(name, unit string) float64 {
	v, _, ok := r.Median(name, unit)
	if !ok {
		return math.NaN()
	}
	return v
}

// Step is one recorded optimization: its description and the benchmark
// output that measured the build before it ("-base" modes) and after it
// side by side.
type Step struct {
	File  string
	Title string
	Text  []string
	Res   *Results
}

// readHistory loads dir/*.txt: each file starts with "# title", then
// "# " lines of description, then go test -bench output.
func readHistory(dir string) ([]Step, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var steps []Step
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		st := Step{File: filepath.ToSlash(file)}
		for _, l := range strings.Split(string(b), "\n") {
			t, ok := strings.CutPrefix(l, "#")
			if !ok {
				break
			}
			t = strings.TrimSpace(t)
			if st.Title == "" {
				st.Title = t
			} else {
				st.Text = append(st.Text, t)
			}
		}
		if st.Title == "" {
			return nil, fmt.Errorf("%s: no \"# title\" line", file)
		}
		if st.Res, err = Parse(bytes.NewReader(b), file); err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// Machine describes where the benchmarks ran.
type Machine struct {
	NProc    int
	CPU      string
	Kernel   string
	Go       string
	BenchDir string
	BenchFS  string
	TmpDir   string
	TmpFS    string
	Load     string
	// WorkloadDir holds the workloads' and the commit benchmark's
	// directories; WorkloadFS describes its file system.
	WorkloadDir string
	WorkloadFS  string
}

// workloadDir mirrors bench's workloadDir and commitDir.
const workloadDir = "/var/tmp"

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU(), Go: runtime.Version(), CPU: "unknown", Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n := 0
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, ":")
			switch strings.TrimSpace(k) {
			case "processor":
				n++
			case "model name":
				m.CPU = strings.TrimSpace(v)
			}
		}
		if n > 0 {
			m.NProc = n
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	m.Load = "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.Load = strings.Join(f[:3], ", ")
		}
	}
	m.BenchDir, m.BenchFS = benchDir(), "tmpfs"
	if m.BenchDir != "" {
		m.BenchFS = fsType(m.BenchDir)
	} else {
		m.BenchDir = "a tmpfs mounted for the run under /var/tmp"
	}
	m.TmpDir = os.TempDir()
	m.TmpFS = fsType(m.TmpDir)
	m.WorkloadDir = workloadDir
	m.WorkloadFS = fsType(workloadDir)
	if m.WorkloadFS == "ext4" {
		if j, ok := ext4Journal(workloadDir); ok && !j {
			m.WorkloadFS = "ext4 without a journal"
		} else if ok {
			m.WorkloadFS = "ext4 with a journal"
		}
	}
	return m
}

// ext4Journal reports whether the ext4 file system of dir has a journal
// (jbd2 lists one as /proc/fs/jbd2/DEVICE-INODE), and whether it could
// tell.
func ext4Journal(dir string) (journal, ok bool) {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return false, false
	}
	uevent, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/uevent", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return false, false
	}
	for _, l := range strings.Split(string(uevent), "\n") {
		if dev, found := strings.CutPrefix(l, "DEVNAME="); found {
			js, _ := filepath.Glob("/proc/fs/jbd2/" + dev + "-*")
			return len(js) > 0, true
		}
	}
	return false, false
}

// benchDir mirrors bench.ParentDir (the report must not import the test
// package's dependencies): $TXEXEC_BENCH_DIR, else a tmpfs the benchmark
// mounted for its run (bench.MountTmpfs), gone by now ("" then).
func benchDir() string {
	return os.Getenv("TXEXEC_BENCH_DIR")
}

func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	switch st.Type {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	}
	return fmt.Sprintf("0x%x", st.Type)
}

// The per-call table's rows: TxOS Table 4's calls first (their geomean is
// the paper's 3.93x), then the halves of the pairs the fixture also times.
var (
	txosOps  = []string{"access", "stat", "open", "unlink", "link", "mkdir", "read", "write"}
	extraOps = []string{"statat", "create", "rmdir", "listdir"}
	// fdOps are not intercepted: they run in the kernel on the descriptor.
	fdOps = map[string]bool{"read": true, "write": true}
)

var opWhat = map[string]string{
	"access":  "access(file, R_OK)",
	"stat":    "stat(file)",
	"statat":  "fstatat(dirfd, \"file\"): the directory by descriptor",
	"open":    "open(file, O_RDONLY) + close",
	"unlink":  "unlink of a file created just before",
	"link":    "link(file, new name)",
	"mkdir":   "mkdir(new name)",
	"read":    "read(fd, 4 KiB), sequential",
	"write":   "write(fd, 4 KiB), sequential",
	"create":  "open(O_CREAT\\|O_EXCL) + close",
	"rmdir":   "rmdir of a directory made just before",
	"listdir": "open + getdents64 to the end + close of a directory of " + listdirEntries + " files",
}

// listdirEntries is the size of the fixture's DIR/many (bench.ListdirEntries).
const listdirEntries = "1000"

// rounds is the number of rounds of the run: the most samples any
// benchmark has (each round runs each benchmark once).
func rounds(r *Results) int {
	n := 0
	for _, name := range r.Order {
		for _, vs := range r.Samples[name] {
			n = max(n, len(vs))
		}
	}
	return n
}

// baseUnit is a metric a before/after table can compare.
type baseUnit struct {
	unit, before, after string
	// cell formats a value.
	cell func(float64) string
}

// baseUnits are the metrics compared, in the order of their tables: time,
// the CPU time of those that report it (BenchmarkCommitKeep: on a shared
// machine it moves much less than the time), then
// BenchmarkSupervisorSyscalls's counts.
var baseUnits = []baseUnit{
	{"ns/call", "before µs", "after µs", us},
	{"cpu-ns/call", "before: CPU µs", "after: CPU µs", us},
	{"handler-syscalls/call", "before: handler system calls per call", "after", count},
	{"syscalls/call", "before: all system calls per call", "after", count},
	{"cs/call", "before: context switches per call", "after", count},
}

func count(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}

type baseRow struct {
	op, mode   string
	base, this float64
}

// baseRows pairs each benchmark's -base mode with the build's own, in
// metric unit: PerCall/OP/MODE-base, SupervisorSyscalls/OP/MODE-base, or
// BENCHMARK/MODE-base for another benchmark.
func baseRows(r *Results, unit string) []baseRow {
	var rows []baseRow
	for _, name := range r.Order {
		op, mode, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(name, "PerCall/"), "SupervisorSyscalls/"), "/")
		if !ok || !strings.HasSuffix(mode, "-base") {
			continue
		}
		base := r.MedianOrNaN(name, unit)
		if math.IsNaN(base) {
			continue
		}
		rows = append(rows, baseRow{op: op, mode: strings.TrimSuffix(mode, "-base"),
			base: base, this: r.MedianOrNaN(strings.TrimSuffix(name, "-base"), unit)})
	}
	return rows
}

// typicalSpread is the median over benchmarks with several ns/call samples
// of (max − min) / median, and how many there were.
func typicalSpread(r *Results) (float64, int) {
	var sp []float64
	for _, name := range r.Order {
		med, n, ok := r.Median(name, "ns/call")
		if !ok || n < 2 || med == 0 {
			continue
		}
		lo, hi := r.Spread(name, "ns/call")
		sp = append(sp, (hi-lo)/med)
	}
	if len(sp) == 0 {
		return 0, 0
	}
	slices.Sort(sp)
	return sp[len(sp)/2], len(sp)
}

func us(ns float64) string {
	if math.IsNaN(ns) {
		return "—"
	}
	v := ns / 1000
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func geomean(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += math.Log(v)
	}
	return math.Exp(s / float64(len(vs)))
}
