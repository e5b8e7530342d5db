// Command report turns the output of txexec's Go benchmarks (`go test
// -bench` on ./bench/...) into docs/performance.md: the per-call table in
// the style of TxOS (SOSP'09) Table 4, the bare seccomp-notify floor
// measured in the same run, the ratios against native and against the
// floor, the workloads (whole programs) with the supervisor's memory and
// staging disk use, the targets of issue 7 and whether they are met, the
// machine and the method, and the record of optimizations kept in
// bench/history. Next to the Markdown file it draws the ratios as SVG bar
// charts (perf-percall.svg, perf-workloads.svg).
//
//	go run ./bench/report -in bench/out.txt -o docs/performance.md
//
// Every number in the generated files comes from -in or from the recorded
// benchmark outputs in -history; nothing is typed in by hand.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
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
	Write(&b, res, steps, machine(), time.Now().UTC())
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

// maxFailureLines bounds what the report quotes of one failure.
const maxFailureLines = 12

// writeFailures lists the benchmarks that failed during the run: their
// numbers are missing from the rounds they failed in.
func writeFailures(w io.Writer, r *Results) {
	if len(r.Failures) == 0 {
		return
	}
	fmt.Fprintf(w, "## Failed benchmarks\n\n")
	fmt.Fprintf(w, "%d benchmark runs failed during this run; the tables below lack their rounds.\n\n", len(r.Failures))
	for _, f := range r.Failures {
		lines := f.Lines
		if len(lines) > maxFailureLines {
			lines = append(slices.Clone(lines[:maxFailureLines]), "…")
		}
		fmt.Fprintf(w, "- Benchmark%s:\n\n  ```\n", f.Name)
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
		fmt.Fprintf(w, "  ```\n\n")
	}
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

// Targets (issue 2 and issue 7).
const (
	targetFloorRatio = 2.0
	targetIORatio    = 1.05
)

// Write renders the report.
func Write(w io.Writer, r *Results, steps []Step, m Machine, now time.Time) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("# Performance\n\n")
	p("<!-- Code generated by `make bench` (go run ./bench/report) from bench/out.txt and bench/history; DO NOT EDIT. -->\n\n")
	p("Generated %s from one `make bench` run on this machine. Each number is the median of the\n", now.Format("2006-01-02 15:04 UTC"))
	p("rounds of that run (see Method); ratios are taken between medians of the same run.\n\n")
	writeFailures(w, r)

	// The floors measured next to the calls (PerCall/stat/floor,
	// PerCall/open/floor), else the ones of BenchmarkFloor.
	floorSync := r.firstOf("PerCall/stat/floor", "Floor/syncwake")
	floorPinned := r.NsPerCall("Floor/syncwake-pinned")
	floorOpen := r.firstOf("PerCall/open/floor", "Floor/open-syncwake")

	p("## Per-call cost\n\n")
	p("In the style of TxOS (SOSP'09) Table 4: the cost of one system call natively, under\n")
	p("`txexec --passthrough` (intercepted and served by the supervisor against the host) and\n")
	p("under `txexec --` (inside a transaction). The floor of an intercepted call is the bare C\n")
	p("seccomp-notify supervisor (bench/floor) with `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` in the\n")
	p("same run: emulating fstatat, or for open and create installing the descriptor with\n")
	p("`SECCOMP_IOCTL_NOTIF_ADDFD` + `SECCOMP_ADDFD_FLAG_SEND` as txexec does. `read` and `write`\n")
	p("are on a descriptor the view handed out and are not intercepted; their floor is the same\n")
	p("native loop under a seccomp filter that allows everything (the cost of being filtered).\n\n")
	p("| call | what is timed | native µs | passthrough µs | tx µs | passthrough / native | tx / native | passthrough / floor | tx / floor |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	var txRatios []float64
	for _, op := range append(slices.Clone(txosOps), extraOps...) {
		nat := r.NsPerCall("PerCall/" + op + "/native")
		pt := r.NsPerCall("PerCall/" + op + "/passthrough")
		tx := r.NsPerCall("PerCall/" + op + "/tx")
		if math.IsNaN(nat) && math.IsNaN(pt) && math.IsNaN(tx) {
			continue
		}
		floor := floorFor(r, op)
		fp, ft := ratio(pt, floor), ratio(tx, floor)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, opWhat[op], us(nat), us(pt), us(tx), ratio(pt, nat), ratio(tx, nat), fp, ft)
		if slices.Contains(txosOps, op) && !math.IsNaN(tx/nat) {
			txRatios = append(txRatios, tx/nat)
		}
	}
	p("\n")
	if len(txRatios) == len(txosOps) {
		p("Geometric mean of the in-transaction ratios over TxOS's eight calls (access, stat, open,\n")
		p("unlink, link, mkdir, read, write): **%.2f×** native (TxOS, in-kernel: 3.93×).\n\n", geomean(txRatios))
	}
	plots := Plots(r)
	if plots[percallPlot] != nil {
		p("![Per-call time over native: passthrough (grey), in a transaction (blue), the floor (orange)](%s)\n\n", percallPlot)
		p("(%s: the table's passthrough / native and tx / native columns as bars, and the floor each\n", percallPlot)
		p("call is compared with over native; the red line is native, 1.0.)\n\n")
	}

	p("## The floor\n\n")
	p("| what | µs per call |\n|---|--:|\n")
	for _, f := range []struct{ name, what string }{
		{"PerCall/stat/floor", "fstatat trapped and emulated by the bare C supervisor, `SYNC_WAKE_UP`, run next to the stat rows"},
		{"PerCall/open/floor", "open + close, openat trapped, descriptor installed with `ADDFD`+`SEND`, `SYNC_WAKE_UP`, run next to the open rows"},
		{"Floor/native", "native fstatat, no filter"},
		{"Floor/syncwake", "fstatat trapped and emulated by the bare C supervisor, `SYNC_WAKE_UP`"},
		{"Floor/syncwake-pinned", "the same, supervisor and caller pinned to CPU 0"},
		{"Floor/open-syncwake", "open + close, openat trapped, descriptor installed with `ADDFD`+`SEND`, `SYNC_WAKE_UP`"},
		{"Floor/open-syncwake-pinned", "the same, pinned to CPU 0"},
		{"PerCall/read/filtered", "read(4 KiB) natively under an allow-all seccomp filter"},
		{"PerCall/write/filtered", "write(4 KiB) natively under an allow-all seccomp filter"},
		{"InProcess/stat/interpose", "fstatat emulated by a Go handler on txexec's worker pool (no syscalls/proc/vfs layers; in-process)"},
		{"InProcess/stat/passthrough", "stat under the whole passthrough path, supervisor in the benchmark process"},
		{"InProcess/stat/tx", "stat in a transaction, supervisor in the benchmark process"},
	} {
		if v := r.NsPerCall(f.name); !math.IsNaN(v) {
			p("| %s | %s |\n", f.what, us(v))
		}
	}
	p("\n")

	if v, n, ok := r.Median("BlockedHandler", "cpu-%"); ok {
		p("While one of its handlers is blocked (an open of a FIFO that nobody writes for 2 s), the\n")
		p("supervisor uses %.2f%% of one CPU, its start-up and exit included (median of %d runs,\n", v, n)
		p("BenchmarkBlockedHandler).\n\n")
	}

	if native, n, ok := r.Median("Commit2000/native+sync", "ns/op"); ok {
		p("## Commit cost\n\n")
		p("One C program creates 2000 files of 1 KiB in a fresh directory under /var/tmp, then calls\n")
		p("sync(2): natively, and as a transaction (durable, and `--no-durable`) with its state directory on\n")
		p("the same file system (BenchmarkCommit2000; median of %d runs, each the mean of 3 runs of the program).\n\n", n)
		p("| variant | s | / native+sync |\n|---|--:|--:|\n")
		p("| native + sync | %.2f | 1.00 |\n", native/1e9)
		for _, v := range []struct{ name, what string }{{"tx-durable", "transaction, durable"}, {"tx-nodurable", "transaction, `--no-durable`"}} {
			if t, _, ok := r.Median("Commit2000/"+v.name, "ns/op"); ok {
				p("| %s | %.2f | %.2f |\n", v.what, t/1e9, t/native)
			}
		}
		p("\nTarget (issue: durable commit of 2000 files ≤ 2× native + sync): ")
		if t, _, ok := r.Median("Commit2000/tx-durable", "ns/op"); ok && t <= 2*native {
			p("**met** in this run.")
		} else {
			p("**not met** in this run.")
		}
		p(" Most of either side is ext4 allocating inodes for new files, which varies widely between\n")
		p("runs on this shared machine; the ratio is only meaningful within one run.\n\n")
	}

	ws := r.Workloads()
	writeWorkloads(w, ws)
	writeCallBudget(w, ws, floorSync, r.NsPerCall("Floor/native"))
	if plots[workloadPlot] != nil {
		p("![Workload time over native per phase and in all: passthrough (grey), ACI (blue), durable (orange)](%s)\n\n", workloadPlot)
		p("(%s: the workload table's passthrough, ACI and durable ratios to native as bars, each\n", workloadPlot)
		p("phase and each workload in all; the red line is native, 1.0.)\n\n")
	}

	p("## Targets\n\n")
	statPT := r.NsPerCall("PerCall/stat/passthrough")
	statTx := r.NsPerCall("PerCall/stat/tx")
	p("- Intercepted path call ≤ %.0f× the bare C notify floor (`SYNC_WAKE_UP`, same run, %s µs):\n", targetFloorRatio, us(floorSync))
	p("  stat %s× passthrough, %s× in a transaction; against the pinned floor (%s µs) %s× and %s×. %s\n",
		ratio(statPT, floorSync), ratio(statTx, floorSync), us(floorPinned), ratio(statPT, floorPinned), ratio(statTx, floorPinned),
		verdict(max(statPT, statTx)/floorSync <= targetFloorRatio))
	worst, worstOp := 0.0, ""
	for _, op := range txosOps {
		if fdOps[op] || op == "open" {
			continue
		}
		for _, mode := range []string{"passthrough", "tx"} {
			if v := r.NsPerCall("PerCall/"+op+"/"+mode) / floorSync; v > worst {
				worst, worstOp = v, op+" "+mode
			}
		}
	}
	if worstOp != "" {
		p("  Worst of the other path calls against the fstatat floor: %s at %.2f×.\n", worstOp, worst)
	}
	openPT, openTx := r.NsPerCall("PerCall/open/passthrough"), r.NsPerCall("PerCall/open/tx")
	openPinned := r.NsPerCall("Floor/open-syncwake-pinned")
	p("- open against its ADDFD floor (%s µs; pinned %s µs): %s× and %s× passthrough, %s× and %s× in a transaction. %s\n",
		us(floorOpen), us(openPinned), ratio(openPT, floorOpen), ratio(openPT, openPinned), ratio(openTx, floorOpen), ratio(openTx, openPinned),
		verdict(max(openPT, openTx)/floorOpen <= targetFloorRatio))
	for _, op := range []string{"read", "write"} {
		nat := r.NsPerCall("PerCall/" + op + "/native")
		filt := r.NsPerCall("PerCall/" + op + "/filtered")
		pt := r.NsPerCall("PerCall/" + op + "/passthrough")
		tx := r.NsPerCall("PerCall/" + op + "/tx")
		p("- %s ≤ %.2f× native: %s× passthrough, %s× tx (an allow-all filter alone: %s×; against it %s× and %s×). %s\n",
			op, targetIORatio, ratio(pt, nat), ratio(tx, nat), ratio(filt, nat), ratio(pt, filt), ratio(tx, filt),
			verdict(max(pt, tx)/nat <= targetIORatio))
		if filt/nat > targetIORatio {
			p("  A seccomp filter that allows every call, which every supervised process needs, is itself above the\n")
			p("  target here: the kernel's entry path for a filtered task costs that much on a 4 KiB call.\n")
		}
	}
	writeWorkloadTargets(w, ws, floorSync, r.NsPerCall("Floor/native"))
	p("\n")

	writeWhere(w, r, floorSync)
	writeBase(w, r)
	writeSpread(w, r)

	p("## Machine\n\n")
	p("| | |\n|---|---|\n")
	p("| CPU | %s (%d online CPUs) |\n", m.CPU, m.NProc)
	p("| kernel | %s |\n", m.Kernel)
	p("| Go | %s |\n", m.Go)
	p("| date | %s |\n", now.Format("2006-01-02"))
	p("| load average when the report was made (1, 5, 15 min) | %s |\n", m.Load)
	p("| files and state directory | temporary directories under %s (%s) |\n", m.BenchDir, m.BenchFS)
	p("| workloads and the 2000-file commit | temporary directories under %s (%s) |\n", m.WorkloadDir, m.WorkloadFS)
	if c := r.Header["cpu"]; c != "" {
		p("| go test reported cpu | %s |\n", c)
	}
	p("\n")

	p("## Method\n\n")
	if n := rounds(r); n > 0 {
		p("- This report is from %d rounds (`make bench BENCH_ROUNDS=%d`).\n", n, n)
	}
	p("- `bench/percall.c` (compiled at benchmark time) performs N calls of one kind and times them\n")
	p("  itself with `clock_gettime` (vDSO, not a system call) around blocks of 64 calls, after\n")
	p("  256 untimed warm-up calls of the same kind. Process start-up, the first lookups of the\n")
	p("  work directory (in a transaction: its first read and the vnodes the view builds) and the\n")
	p("  commit are therefore not counted — as in TxOS, whose table times calls in a loop.\n")
	p("  Paired calls (create/unlink, mkdir/rmdir, link/unlink) alternate in blocks: the timed\n")
	p("  half of a block, then the untimed half that restores the directory, over 64 names.\n")
	p("- Every run gets a fresh work directory holding an unmodified 1 MiB host file and, for\n")
	p("  `txexec`, a fresh `TXEXEC_STATE_DIR`; the transaction commits when the fixture exits\n")
	p("  (durable). In a transaction, `unlink`/`rmdir` remove names the same transaction created.\n")
	p("- Modes run back to back for each call (native, passthrough, tx, and the floor where there\n")
	p("  is one), so each ratio compares numbers taken within seconds of each other, and `make\n")
	p("  bench` runs the whole suite several times over (rounds, not `-count`, which would repeat\n")
	p("  each benchmark back to back); the tables show medians over the rounds.\n")
	if v, n, ok := r.Median("BareNotifyStat", "ns/call"); ok {
		lo, hi := r.Spread("BareNotifyStat", "ns/call")
		p("- This VM's vCPUs halt when idle and are slow to wake: without `SYNC_WAKE_UP` or\n")
		p("  pinning, the bare C notify round trip took %s µs (median of %d, %s–%s;\n", us(v), n, us(lo), us(hi))
		p("  bench/floor's BareNotifyStat), against %s µs with `SYNC_WAKE_UP`.\n", us(floorSync))
	}
	if sp, n := typicalSpread(r); n > 0 {
		p("- Noise: over the %d benchmarks measured more than once, the median spread (max − min)\n", n)
		p("  is %.0f%% of the median; the Spread table shows each one.\n", 100*sp)
	}
	p("- Work files and state live on %s (%s; not /dev/shm: /dev is passed through by\n", m.BenchFS, m.BenchDir)
	p("  transactions, so calls there would be served on the host, not by the view).")
	if disk, tmpfs := r.NsPerCall("PerCall/create/native-tmpdir"), r.NsPerCall("PerCall/create/native"); !math.IsNaN(disk + tmpfs) {
		p(" A native create in TMPDIR (%s, %s) took %s µs against %s µs there,\n", m.TmpDir, m.TmpFS, us(disk), us(tmpfs))
		p("  which would hide the system-call path the table is about.")
	}
	p("\n")
	writeWorkloadMethod(w, r, m)
	p("- Profiling: `go test -run '^$' -bench 'InProcess/stat/tx' -benchtime 20000x -cpuprofile\n")
	p("  cpu.out ./bench/` runs the same fixture under a supervisor inside the test process;\n")
	p("  `TXEXEC_CPUPROFILE=FILE txexec -- COMMAND` writes a CPU profile of the supervisor of a\n")
	p("  real run (`go tool pprof -top bin/txexec FILE`), which is how the workloads are profiled;\n")
	p("  `TXEXEC_BENCH_BASE=/path/to/older/txexec` adds `passthrough-base` and `tx-base` modes to\n")
	p("  BenchmarkPerCall, which is how each optimization below was measured against its parent.\n\n")

	writeSteps(w, steps)
}

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

// writeWorkloadMethod says how the workloads were measured.
func writeWorkloadMethod(w io.Writer, r *Results, m Machine) {
	if len(r.Workloads()) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("- Workloads (bench/workload_test.go): each round runs every phase once in every mode. Each\n")
	p("  mode has its own work directory and state directory (`--state-dir`, its store created\n")
	p("  beforehand) under %s (%s), so that a commit is a rename on the same file system.\n", m.WorkloadDir, m.WorkloadFS)
	p("  Modes alternate phase by phase (dpkg, which changes the system's package database: each\n")
	p("  mode installs and removes before the next), in an order that rotates with the phase and\n")
	p("  the round, so that each mode runs first as often as the others. One untimed native run\n")
	p("  of every phase warms the caches first; an untimed sync(2) precedes every timed run, so\n")
	p("  that no run pays for the write-back of another. Nothing is deleted until the workload's\n")
	p("  last phase: deletions slow down later file creation (below).\n")
	if strings.Contains(m.WorkloadFS, "without a journal") {
		p("- %s is ext4 without a journal. Its inode allocator then skips every inode deleted in\n", m.WorkloadDir)
		p("  the last minute, one by one (the kernel's `recently_deleted`), so creating files shortly\n")
		p("  after anyone on this shared machine deleted many costs up to several hundred µs per file,\n")
		p("  natively and under txexec alike: the create-heavy phases (LFS small create, RAB mkdir\n")
		p("  and cp, the build, the 2000-file commit) vary several-fold between runs; their ratios\n")
		p("  are the least reliable here, and one below 1 is that noise, not txexec being faster.\n")
	}
	p("- Peak RSS and staging use come from txexec itself: with `TXEXEC_STATS=FILE` in its\n")
	p("  environment, txexec writes at exit `vmhwm_bytes` (VmHWM of its own /proc/self/status,\n")
	p("  after the commit: the supervisor alone, not the command's processes, which wait4's\n")
	p("  rusage would add in), `staging_bytes` (st_blocks × 512 of every inode in the\n")
	p("  transaction's staging directory, measured when the command has ended, just before commit\n")
	p("  or abort) and `staging_files` (cmd/txexec/benchhooks.go).\n")
	if len(r.Retries) > 0 {
		if len(r.Retries) == 1 {
			p("- 1 timed run failed for another process and was run again (only the successful run\n")
		} else {
			p("- %d timed runs failed for another process and were run again (only the successful run\n", len(r.Retries))
		}
		p("  is counted): a transaction that conflicted with a change to a file it had read (dpkg's\n")
		p("  man-db trigger reads /var/cache/man, which any dpkg run changes), or dpkg finding its lock\n")
		p("  taken. The first: %s\n", strings.TrimSpace(r.Retries[0]))
	}
}

// writeWhere decomposes an intercepted stat with the in-process runs, and
// says what the remaining time is made of.
func writeWhere(w io.Writer, r *Results, floorSync float64) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("## Where the time of an intercepted call goes\n\n")
	goFloor := r.NsPerCall("InProcess/stat/interpose")
	inPT := r.NsPerCall("InProcess/stat/passthrough")
	inTx := r.NsPerCall("InProcess/stat/tx")
	if !math.IsNaN(goFloor + inPT + inTx) {
		p("The same stat loop, supervised inside the benchmark process (BenchmarkInProcess):\n\n")
		p("| layer | µs per call | added |\n|---|--:|--:|\n")
		p("| bare C supervisor (bench/floor, separate process) | %s | |\n", us(floorSync))
		p("| Go handler doing only what the C one does, on txexec's worker pool | %s | %s |\n", us(goFloor), us(goFloor-floorSync))
		p("| + syscalls/proc/vfs: decode, NOTIF_ID_VALID, caller, host view | %s | %s |\n", us(inPT), us(inPT-goFloor))
		p("| + the transaction's view (walk, read set) | %s | %s |\n\n", us(inTx), us(inTx-inPT))
		p("(The C floor ran in its own process next to the stat rows, the rest in the benchmark\n")
		p("process; a difference within the spread of its two numbers is noise.)\n\n")
	}
	p("Per intercepted stat the supervisor makes six system calls — NOTIF_RECV, process_vm_readv\n")
	p("(the path), NOTIF_ID_VALID, the fstatat itself, process_vm_writev (the result), NOTIF_SEND —\n")
	p("and the caller and the worker switch twice; the C floor makes five of them. On this VM a\n")
	p("system call costs about as much as a native stat, so these dominate: the Go code between\n")
	p("them (dispatch, caller sampling, path walk, a few small allocations) is a few percent of\n")
	p("the profile (`go test -cpuprofile` on BenchmarkInProcess). What limits further gains:\n\n")
	p("- **The round trip itself.** Two context switches and RECV/SEND are the floor; a\n")
	p("  wake-up that lands on an idle vCPU instead of the caller's costs more than the rest\n")
	p("  of the call here (compare the open floor pinned and unpinned), so everything that\n")
	p("  wakes a second thread per call (the old worker pool) or moves work to the other CPU\n")
	p("  shows up directly.\n")
	p("- **NOTIF_ID_VALID** stays: it is what makes acting on memory read by pid safe against\n")
	p("  pid reuse. Dropping it would need the tracer to hold off reaping a thread while one of\n")
	p("  its calls is being served.\n")
	p("- **open** replies with ADDFD+SEND, which returns only after the caller has taken the\n")
	p("  descriptor and is ended by a wake-up that is not a sync one. When that wake-up goes to\n")
	p("  the other CPU, txexec hides the wait behind a second receiving worker (optimization 5),\n")
	p("  which is why it can beat the single-threaded C floor unpinned; the pinned floor is the\n")
	p("  fairer bound.\n")
	if other, root := r.NsPerCall("PerCall/stat/passthrough-other-user"), r.NsPerCall("PerCall/stat/passthrough"); !math.IsNaN(other + root) {
		p("- **Callers that are not the supervisor's user.** Under `--passthrough` every host call\n")
		p("  runs with the caller's credentials (setgroups, setfsgid, setfsuid and capset on the\n")
		p("  worker thread, and back), which a caller with the supervisor's identity skips; the\n")
		p("  transaction's view decides permissions itself from the caller's credentials and has no\n")
		p("  switch for a stat. stat by nobody: %s µs under passthrough, %s µs in a transaction,\n",
			us(other), us(r.NsPerCall("PerCall/stat/tx-other-user")))
		p("  against %s µs and %s µs by root. The switch makes only the calls that change something\n",
			us(root), us(r.NsPerCall("PerCall/stat/tx")))
		p("  (optimization 8); man-db's trigger, most of dpkg's calls, runs as the user man.\n")
	}
	p("- **read and write** are not intercepted, but every system call of a filtered process\n")
	p("  takes the kernel's seccomp entry path: an allow-all filter alone costs about what\n")
	p("  txexec costs (the `filtered` runs).\n")
	p("- **The go runtime**: each `syscall.Syscall` costs a few hundred nanoseconds of\n")
	p("  scheduler bookkeeping over a raw one. Only calls that can never block are made raw\n")
	p("  (NOTIF_ID_VALID); copying tracee memory can fault on userfaultfd-registered pages and\n")
	p("  host file-system calls can block on FUSE or NFS, so those keep the runtime's path.\n\n")
}

// writeBase prints the side-by-side comparison when the run had -base modes.
func writeBase(w io.Writer, r *Results) {
	rows := baseRows(r, "ns/call")
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "## Against the base build (TXEXEC_BENCH_BASE)\n\n")
	writeBaseTable(w, rows, baseUnits[0])
}

// baseUnit is a metric a before/after table can compare.
type baseUnit struct {
	unit, before, after string
	// cell formats a value.
	cell func(float64) string
}

// baseUnits are the metrics compared, in the order of their tables: time,
// then BenchmarkSupervisorSyscalls's counts.
var baseUnits = []baseUnit{
	{"ns/call", "before µs", "after µs", us},
	{"handler-syscalls/call", "before: handler system calls per call", "after", count},
	{"syscalls/call", "before: all system calls per call", "after", count},
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

func writeBaseTable(w io.Writer, rows []baseRow, u baseUnit) {
	fmt.Fprintf(w, "| call | mode | %s | %s | after / before |\n|---|---|--:|--:|--:|\n", u.before, u.after)
	for _, row := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", row.op, row.mode, u.cell(row.base), u.cell(row.this), ratio(row.this, row.base))
	}
	fmt.Fprintf(w, "\n")
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

// writeSpread shows min–max per benchmark, so the noise is visible.
func writeSpread(w io.Writer, r *Results) {
	fmt.Fprintf(w, "## Spread\n\n| benchmark | runs | median µs | min–max µs |\n|---|--:|--:|--:|\n")
	for _, name := range r.Order {
		med, n, ok := r.Median(name, "ns/call")
		if !ok {
			continue
		}
		lo, hi := r.Spread(name, "ns/call")
		fmt.Fprintf(w, "| %s | %d | %s | %s–%s |\n", name, n, us(med), us(lo), us(hi))
	}
	fmt.Fprintf(w, "\n")
}

func writeSteps(w io.Writer, steps []Step) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(w, "## Optimizations\n\n")
	fmt.Fprintf(w, "Each was measured when it was made: the build before it (`-base`) and the build with it,\n")
	fmt.Fprintf(w, "side by side in one run of `BenchmarkPerCall` (or of the benchmark the step names); the raw\n")
	fmt.Fprintf(w, "output is the file named.\n")
	fmt.Fprintf(w, "Steps 1–5 ran in /dev/shm, which transactions pass through to the host (/dev): their tx\n")
	fmt.Fprintf(w, "rows time a transaction's path to a passed-through directory, not the view; later steps\n")
	fmt.Fprintf(w, "ran on a tmpfs of their own (see Method).\n\n")
	for i, st := range steps {
		fmt.Fprintf(w, "### %d. %s\n\n", i+1, st.Title)
		for _, t := range st.Text {
			fmt.Fprintf(w, "%s\n\n", t)
		}
		tables := 0
		for _, u := range baseUnits {
			if rows := baseRows(st.Res, u.unit); len(rows) > 0 {
				writeBaseTable(w, rows, u)
				tables++
			}
		}
		if tables == 0 {
			fmt.Fprintf(w, "(%s holds no -base measurements.)\n\n", st.File)
			continue
		}
		fmt.Fprintf(w, "Raw output: `%s`.\n\n", st.File)
	}
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

// verdict says whether a target was met; a comparison with a number that
// was not measured (NaN) is false, and says so.
func verdict(ok bool) string {
	if ok {
		return "**Met.**"
	}
	return "**Not met** (or not measured)."
}

func geomean(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += math.Log(v)
	}
	return math.Exp(s / float64(len(vs)))
}
