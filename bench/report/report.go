package main

import (
	_ "embed"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/template"
	"time"
)

// reportSource is the prose of docs/performance.md with the places of the
// numbers and tables that report computes.
//
//go:embed report.md.tmpl
var reportSource string

// reportTemplate's functions format numbers as the tables do: us (ns as
// µs), ratio (a/b), ratioX, secs and mib; inc numbers the steps from 1.
var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"join":   strings.Join,
	"us":     us,
	"ratio":  ratio,
	"ratioX": ratioX,
	"secs":   secs,
	"mib":    mib,
	"inc":    func(i int) int { return i + 1 },
}).Parse(reportSource))

// Write renders the report of r, with the optimizations of steps, as run
// on m at now.
func Write(w io.Writer, r *Results, steps []Step, m Machine, now time.Time) error {
	return reportTemplate.Execute(w, newReport(r, steps, m, now))
}

// report is what the template renders: the numbers of one run, and the
// rows of its tables as cells.
type report struct {
	Generated, Date string
	Failures        []Failure
	PerCall         [][]string
	HasGeomean      bool
	Geomean         float64
	// PercallPlot and WorkloadPlot are the plots' file names, "" for a
	// plot the run has no data for.
	PercallPlot, WorkloadPlot string
	Floors                    [][]string
	Blocked                   *blocked
	Commit                    *commit
	Parallel                  *parallelRuns
	Server                    *server
	FloorGaps                 *floorGaps
	TwoCallers                *twoCallers
	Workloads                 *workloads
	CallBudget                *callBudget
	WorkloadSwitches          *workloadSwitches
	Accounting                *accounting
	Targets                   targets
	WorkloadTargets           workloadTargets
	Where                     where
	Base                      *baseTable
	Spread                    [][]string
	Machine                   Machine
	GoTestCPU                 string
	Method                    method
	Steps                     []step
}

// blocked is BenchmarkBlockedHandler's CPU use (%) and its number of runs.
type blocked struct {
	CPU  float64
	Runs int
}

// commit is BenchmarkCommit2000's table and whether the durable commit
// met its target.
type commit struct {
	Runs int
	Rows [][]string
	Met  bool
}

// Targets (issue 2 and issue 7).
const (
	targetFloorRatio = 2.0
	targetIORatio    = 1.05
)

// targets are the per-call targets' numbers (ns) and verdicts.
type targets struct {
	FloorTarget                                   float64
	FloorSync, FloorPinned, FloorOpen, OpenPinned float64
	StatPT, StatTx, OpenPT, OpenTx                float64
	StatMet, OpenMet                              bool
	// WorstOp is the intercepted path call slowest against the fstatat
	// floor ("mkdir tx"), Worst that ratio.
	WorstOp string
	Worst   float64
	IO      []ioTarget
}

// ioTarget is a descriptor call's target: read or write near native.
type ioTarget struct {
	Op                       string
	Target                   float64
	Native, Filtered, PT, Tx float64
	Met                      bool
	// FilterAbove: an allow-all filter alone misses the target.
	FilterAbove bool
}

// where is the decomposition of an intercepted stat (ns).
type where struct {
	HasInProcess                                bool
	FloorSync, GoFloor, InPassthrough, InTx     float64
	GoFloorAdded, InPassthroughAdded, InTxAdded float64
	OtherUser                                   *otherUser
}

// otherUser is a stat by a caller that is not the supervisor's user,
// against one by root (ns).
type otherUser struct {
	Passthrough, Tx, RootPassthrough, RootTx float64
}

// method is what the Method section says of the run.
type method struct {
	Rounds     int
	BareNotify *bareNotify
	Spread     *spreadSummary
	Machine    Machine
	// TmpDirCreate is a native create in TMPDIR, when the run timed one.
	TmpDirCreate *tmpDirCreate
	Workloads    bool
	// NoJournal: the workloads ran on ext4 without a journal.
	NoJournal  bool
	Retries    int
	FirstRetry string
}

// bareNotify is the bare C notify round trip without SYNC_WAKE_UP (ns).
type bareNotify struct {
	Median, Lo, Hi, FloorSync float64
	Runs                      int
}

// spreadSummary is typicalSpread's result.
type spreadSummary struct {
	Percent float64
	N       int
}

type tmpDirCreate struct {
	Dir, FS     string
	Disk, Tmpfs float64
}

// baseTable is a before/after table of one metric.
type baseTable struct {
	Before, After string
	Rows          [][]string
}

// step is one recorded optimization as the report shows it.
type step struct {
	Title  string
	Text   []string
	File   string
	Tables []baseTable
}

// maxFailureLines bounds what the report quotes of one failure.
const maxFailureLines = 12

func newReport(r *Results, steps []Step, m Machine, now time.Time) report {
	rep := report{
		Generated: now.Format("2006-01-02 15:04 UTC"),
		Date:      now.Format("2006-01-02"),
		Machine:   m,
		GoTestCPU: r.Header["cpu"],
		Steps:     newSteps(steps),
	}
	for _, f := range r.Failures {
		if len(f.Lines) > maxFailureLines {
			f.Lines = append(slices.Clone(f.Lines[:maxFailureLines]), "…")
		}
		rep.Failures = append(rep.Failures, f)
	}

	// The floors measured next to the calls (PerCall/stat/floor,
	// PerCall/open/floor), else the ones of BenchmarkFloor.
	floorSync := r.firstOf("PerCall/stat/floor", "Floor/syncwake")
	floorNative := r.NsPerCall("Floor/native")

	var txRatios []float64
	for _, op := range append(slices.Clone(txosOps), extraOps...) {
		nat := r.NsPerCall("PerCall/" + op + "/native")
		pt := r.NsPerCall("PerCall/" + op + "/passthrough")
		tx := r.NsPerCall("PerCall/" + op + "/tx")
		if math.IsNaN(nat) && math.IsNaN(pt) && math.IsNaN(tx) {
			continue
		}
		floor := floorFor(r, op)
		rep.PerCall = append(rep.PerCall, []string{op, opWhat[op], us(nat), us(pt), us(tx),
			ratio(pt, nat), ratio(tx, nat), ratio(pt, floor), ratio(tx, floor)})
		if slices.Contains(txosOps, op) && !math.IsNaN(tx/nat) {
			txRatios = append(txRatios, tx/nat)
		}
	}
	if len(txRatios) == len(txosOps) {
		rep.HasGeomean, rep.Geomean = true, geomean(txRatios)
	}
	plots := Plots(r)
	if plots[percallPlot] != nil {
		rep.PercallPlot = percallPlot
	}
	if plots[workloadPlot] != nil {
		rep.WorkloadPlot = workloadPlot
	}

	for _, f := range floorRows {
		if v := r.NsPerCall(f.name); !math.IsNaN(v) {
			rep.Floors = append(rep.Floors, []string{f.what, us(v)})
		}
	}
	if v, n, ok := r.Median("BlockedHandler", "cpu-%"); ok {
		rep.Blocked = &blocked{CPU: v, Runs: n}
	}
	rep.Commit = newCommit(r)
	rep.Parallel = newParallelRuns(r)
	rep.Server = newServer(r)

	ws := r.Workloads()
	rep.Workloads = newWorkloads(ws)
	rep.CallBudget = newCallBudget(ws, floorSync, floorNative)
	rep.FloorGaps = newFloorGaps(r)
	rep.TwoCallers = newTwoCallers(r)
	rep.WorkloadSwitches = newWorkloadSwitches(ws, r.Header["switch-counter"])
	rep.Accounting = newAccounting(r, ws, rep.FloorGaps, rep.TwoCallers)
	rep.Targets = newTargets(r, floorSync)
	rep.WorkloadTargets = newWorkloadTargets(ws, floorSync, floorNative)
	rep.Where = newWhere(r, floorSync)
	if rows := baseRows(r, "ns/call"); len(rows) > 0 {
		t := newBaseTable(rows, baseUnits[0])
		rep.Base = &t
	}
	for _, name := range r.Order {
		med, n, ok := r.Median(name, "ns/call")
		if !ok {
			continue
		}
		lo, hi := r.Spread(name, "ns/call")
		rep.Spread = append(rep.Spread, []string{name, fmt.Sprint(n), us(med), us(lo) + "–" + us(hi)})
	}
	rep.Method = newMethod(r, m, floorSync)
	return rep
}

// floorRows are the rows of the floor table, each shown if it was
// measured.
var floorRows = []struct{ name, what string }{
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
}

// newCommit is BenchmarkCommit2000's table, nil if it did not run.
func newCommit(r *Results) *commit {
	native, n, ok := r.Median("Commit2000/native+sync", "ns/op")
	if !ok {
		return nil
	}
	c := &commit{Runs: n, Rows: [][]string{{"native + sync", fmt.Sprintf("%.2f", native/1e9), "1.00"}}}
	for _, v := range []struct{ name, what string }{{"tx-durable", "transaction, durable"}, {"tx-nodurable", "transaction, `--no-durable`"}} {
		if t, _, ok := r.Median("Commit2000/"+v.name, "ns/op"); ok {
			c.Rows = append(c.Rows, []string{v.what, fmt.Sprintf("%.2f", t/1e9), fmt.Sprintf("%.2f", t/native)})
		}
	}
	t, _, ok := r.Median("Commit2000/tx-durable", "ns/op")
	c.Met = ok && t <= 2*native
	return c
}

// server is BenchmarkInProgramServer's table: the example mail server's
// deliveries per second in each configuration, against flock natively.
type server struct {
	Runs int
	Rows [][]string
}

// serverRows are the configurations of BenchmarkInProgramServer
// (bench.InProgramServerConfigs), in the order shown.
var serverRows = []struct{ name, what string }{
	{"flock-native", "flock per mailbox, native"},
	{"flock-txexec", "flock per mailbox, under `txexec --in-program`"},
	{"tx-nondurable", "one transaction per delivery, `txexec --in-program --no-durable`"},
	{"tx-durable", "one transaction per delivery, `txexec --in-program` (durable)"},
	{"flock-fsync-native", "flock per mailbox with fsyncs, native"},
}

// newServer is BenchmarkInProgramServer's table, nil if it did not run.
func newServer(r *Results) *server {
	base, n, ok := r.Median("InProgramServer/flock-native", "deliveries/s")
	if !ok {
		return nil
	}
	synced, _, hasSynced := r.Median("InProgramServer/flock-fsync-native", "deliveries/s")
	sv := &server{Runs: n}
	for _, row := range serverRows {
		rate, _, ok := r.Median("InProgramServer/"+row.name, "deliveries/s")
		if !ok {
			continue
		}
		runs, _, _ := r.Median("InProgramServer/"+row.name, "runs/delivery")
		toSynced := "–"
		if hasSynced {
			toSynced = fmt.Sprintf("%.2f", rate/synced)
		}
		sv.Rows = append(sv.Rows, []string{row.what, fmt.Sprintf("%.0f", rate), fmt.Sprintf("%.2f", rate/base), toSynced, fmt.Sprintf("%.2f", runs)})
	}
	return sv
}

// parallelRuns is BenchmarkParallel's table: one row per workload and
// variant.
type parallelRuns struct {
	Runs int
	Rows [][]string
}

// parallelVariants are BenchmarkParallel's variants, in the table's
// order, with what the table calls them.
var parallelVariants = []struct{ name, what string }{
	{"native-serial", "natively, one after another"},
	{"xargs-P2", "`xargs -P 2`, natively"},
	{"xargs-P4", "`xargs -P 4`, natively"},
	{"serial", "`txexec --` each, one after another"},
	{"parallel-j1", "`txexec parallel -j1`"},
	{"parallel-j2", "`txexec parallel -j2`"},
	{"parallel-j4", "`txexec parallel -j4`"},
}

// newParallelRuns is BenchmarkParallel's table, nil if it did not run:
// each variant's wall time, its speed-up over the serial txexec runs and
// its time against xargs -P 4's (medians).
func newParallelRuns(r *Results) *parallelRuns {
	var p parallelRuns
	for _, w := range []string{"independent", "chain", "mix"} {
		serial, n, ok := r.Median("Parallel/"+w+"/serial", "ns/op")
		if !ok {
			continue
		}
		p.Runs = n
		xargs, _, _ := r.Median("Parallel/"+w+"/xargs-P4", "ns/op")
		for _, v := range parallelVariants {
			t, _, ok := r.Median("Parallel/"+w+"/"+v.name, "ns/op")
			if !ok {
				continue
			}
			p.Rows = append(p.Rows, []string{w, v.what, fmt.Sprintf("%.1f", t/1e9),
				fmt.Sprintf("%.2f", serial/t), ratioCell(t, xargs)})
		}
	}
	if p.Rows == nil {
		return nil
	}
	return &p
}

// ratioCell is a/b with two decimals, or "–" without b.
func ratioCell(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func newTargets(r *Results, floorSync float64) targets {
	t := targets{
		FloorTarget: targetFloorRatio,
		FloorSync:   floorSync,
		FloorPinned: r.NsPerCall("Floor/syncwake-pinned"),
		FloorOpen:   r.firstOf("PerCall/open/floor", "Floor/open-syncwake"),
		OpenPinned:  r.NsPerCall("Floor/open-syncwake-pinned"),
		StatPT:      r.NsPerCall("PerCall/stat/passthrough"),
		StatTx:      r.NsPerCall("PerCall/stat/tx"),
		OpenPT:      r.NsPerCall("PerCall/open/passthrough"),
		OpenTx:      r.NsPerCall("PerCall/open/tx"),
	}
	t.StatMet = max(t.StatPT, t.StatTx)/floorSync <= targetFloorRatio
	t.OpenMet = max(t.OpenPT, t.OpenTx)/t.FloorOpen <= targetFloorRatio
	for _, op := range txosOps {
		if fdOps[op] || op == "open" {
			continue
		}
		for _, mode := range []string{"passthrough", "tx"} {
			if v := r.NsPerCall("PerCall/"+op+"/"+mode) / floorSync; v > t.Worst {
				t.Worst, t.WorstOp = v, op+" "+mode
			}
		}
	}
	for _, op := range []string{"read", "write"} {
		io := ioTarget{Op: op, Target: targetIORatio,
			Native:   r.NsPerCall("PerCall/" + op + "/native"),
			Filtered: r.NsPerCall("PerCall/" + op + "/filtered"),
			PT:       r.NsPerCall("PerCall/" + op + "/passthrough"),
			Tx:       r.NsPerCall("PerCall/" + op + "/tx")}
		io.Met = max(io.PT, io.Tx)/io.Native <= targetIORatio
		io.FilterAbove = io.Filtered/io.Native > targetIORatio
		t.IO = append(t.IO, io)
	}
	return t
}

func newWhere(r *Results, floorSync float64) where {
	w := where{FloorSync: floorSync,
		GoFloor:       r.NsPerCall("InProcess/stat/interpose"),
		InPassthrough: r.NsPerCall("InProcess/stat/passthrough"),
		InTx:          r.NsPerCall("InProcess/stat/tx")}
	w.HasInProcess = !math.IsNaN(w.GoFloor + w.InPassthrough + w.InTx)
	w.GoFloorAdded, w.InPassthroughAdded, w.InTxAdded = w.GoFloor-floorSync, w.InPassthrough-w.GoFloor, w.InTx-w.InPassthrough
	if other, root := r.NsPerCall("PerCall/stat/passthrough-other-user"), r.NsPerCall("PerCall/stat/passthrough"); !math.IsNaN(other + root) {
		w.OtherUser = &otherUser{Passthrough: other, Tx: r.NsPerCall("PerCall/stat/tx-other-user"),
			RootPassthrough: root, RootTx: r.NsPerCall("PerCall/stat/tx")}
	}
	return w
}

func newMethod(r *Results, m Machine, floorSync float64) method {
	md := method{Rounds: rounds(r), Machine: m,
		Workloads: len(r.Workloads()) > 0,
		NoJournal: strings.Contains(m.WorkloadFS, "without a journal"),
		Retries:   len(r.Retries)}
	if md.Retries > 0 {
		md.FirstRetry = strings.TrimSpace(r.Retries[0])
	}
	if v, n, ok := r.Median("BareNotifyStat", "ns/call"); ok {
		lo, hi := r.Spread("BareNotifyStat", "ns/call")
		md.BareNotify = &bareNotify{Median: v, Runs: n, Lo: lo, Hi: hi, FloorSync: floorSync}
	}
	if sp, n := typicalSpread(r); n > 0 {
		md.Spread = &spreadSummary{Percent: 100 * sp, N: n}
	}
	if disk, tmpfs := r.NsPerCall("PerCall/create/native-tmpdir"), r.NsPerCall("PerCall/create/native"); !math.IsNaN(disk + tmpfs) {
		md.TmpDirCreate = &tmpDirCreate{Dir: m.TmpDir, FS: m.TmpFS, Disk: disk, Tmpfs: tmpfs}
	}
	return md
}

func newBaseTable(rows []baseRow, u baseUnit) baseTable {
	t := baseTable{Before: u.before, After: u.after}
	for _, row := range rows {
		t.Rows = append(t.Rows, []string{row.op, row.mode, u.cell(row.base), u.cell(row.this), ratio(row.this, row.base)})
	}
	return t
}

func newSteps(steps []Step) []step {
	var out []step
	for _, st := range steps {
		s := step{Title: st.Title, Text: st.Text, File: st.File}
		for _, u := range baseUnits {
			if rows := baseRows(st.Res, u.unit); len(rows) > 0 {
				s.Tables = append(s.Tables, newBaseTable(rows, u))
			}
		}
		out = append(out, s)
	}
	return out
}
