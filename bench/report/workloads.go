package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// workloadDef is what the report adds to a workload the benchmark
// describes itself (the "workload-NAME:" and "phases-NAME:" lines that
// BenchmarkWorkload prints): its row title and the TxOS (SOSP'09) figure
// for it quoted in issue 7, where there is one.
type workloadDef struct {
	name, title, txos string
}

// workloadDefs are in the order of the tables.
var workloadDefs = []workloadDef{
	{name: "true", title: "empty transaction"},
	{name: "dpkg", title: "dpkg -i + -r", txos: "1.1×"},
	{name: "build", title: "parallel C build", txos: "1.0–1.1× (make)"},
	{name: "rab", title: "RAB-like"},
	{name: "lfs-large", title: "LFS large"},
	{name: "lfs-small", title: "LFS small"},
}

// Workload modes as BenchmarkWorkload names them, in the tables' order.
const (
	modeNative      = "native"
	modeNativeSync  = "native+sync"
	modePassthrough = "passthrough"
	// modePassthroughFast is --passthrough --fast-lookups (docs/fastpath.md).
	modePassthroughFast = "passthrough+fast"
	modeACI             = "aci"
	modeDurable         = "durable"
	// modeDurableFast is a durable transaction with --fast-lookups.
	modeDurableFast = "durable+fast"
)

var wlModes = []string{modeNative, modeNativeSync, modePassthrough, modePassthroughFast, modeACI, modeDurable, modeDurableFast}

// Workload is one BenchmarkWorkload benchmark's results.
type Workload struct {
	Name, Title, What, TxOS string
	// Phases in the order they ran.
	Phases []string
	// Secs (wall time), CPU (seconds of the command's tree and txexec),
	// RSS (MiB), Staging (MiB) and Calls (system calls the supervisor
	// answered) map phase → mode → one value per round; so do Switches
	// and Migrations (context switches and CPU migrations of the tree),
	// Execs, Forks (new processes and threads), Commit (s) and Staged
	// (files), from TXEXEC_STATS.
	Secs, CPU, RSS, Staging, Calls                     map[string]map[string][]float64
	Switches, Migrations, Execs, Forks, Commit, Staged map[string]map[string][]float64
	// FDReplies (replies that installed a descriptor), Handle and Reply
	// (the workers' seconds in handlers and in replies) and SupCPU
	// (txexec's own CPU seconds while the tree ran), from TXEXEC_STATS;
	// empty in runs from before txexec counted them.
	FDReplies, Handle, Reply, SupCPU map[string]map[string][]float64
	// Flags are the metrics reported as 1 (which variant ran: apt-hello).
	Flags []string
	// Jobs is how many processes the workload runs at once ("jobs-NAME:"),
	// 1 when it did not say.
	Jobs int
}

// workloadQtys are the quantities of BenchmarkWorkload's metric units,
// those that end in another's suffix first ("commit-s" before "s").
var workloadQtys = []string{"rss-MiB", "staging-MiB", "supcpu-s", "cpu-s", "commit-s", "handle-s", "reply-s", "calls", "cs", "migrations", "execs", "forks", "staged", "fdreplies", "s"}

// workloadUnit splits a BenchmarkWorkload metric unit "PHASE/MODE-QTY"
// (QTY one of workloadQtys).
func workloadUnit(unit string) (phase, mode, qty string, ok bool) {
	phase, rest, ok := strings.Cut(unit, "/")
	if !ok {
		return "", "", "", false
	}
	for _, q := range workloadQtys {
		if m, found := strings.CutSuffix(rest, "-"+q); found && m != "" {
			return phase, m, q, true
		}
	}
	return "", "", "", false
}

// Workloads returns the workloads measured, those of workloadDefs first
// in its order, then any other in the order of the output.
func (r *Results) Workloads() []Workload {
	var names []string
	for _, d := range workloadDefs {
		if r.Samples["Workload/"+d.name] != nil {
			names = append(names, d.name)
		}
	}
	for _, n := range r.Order {
		if w, ok := strings.CutPrefix(n, "Workload/"); ok && !strings.Contains(w, "/") && !slices.Contains(names, w) {
			names = append(names, w)
		}
	}
	var ws []Workload
	for _, name := range names {
		w := Workload{Name: name, Title: name, What: r.Header["workload-"+name], Jobs: 1,
			Secs: map[string]map[string][]float64{}, CPU: map[string]map[string][]float64{},
			RSS: map[string]map[string][]float64{}, Staging: map[string]map[string][]float64{},
			Calls: map[string]map[string][]float64{}, Switches: map[string]map[string][]float64{},
			Migrations: map[string]map[string][]float64{}, Execs: map[string]map[string][]float64{},
			Forks: map[string]map[string][]float64{}, Commit: map[string]map[string][]float64{},
			Staged: map[string]map[string][]float64{}, FDReplies: map[string]map[string][]float64{},
			Handle: map[string]map[string][]float64{}, Reply: map[string]map[string][]float64{},
			SupCPU: map[string]map[string][]float64{}}
		for _, d := range workloadDefs {
			if d.name == name {
				w.Title, w.TxOS = d.title, d.txos
			}
		}
		var seen []string
		units := r.Samples["Workload/"+name]
		for _, unit := range sortedKeys(units) {
			vs := units[unit]
			phase, mode, qty, ok := workloadUnit(unit)
			if !ok {
				if unit != "ns/op" && len(vs) > 0 && vs[0] == 1 {
					w.Flags = append(w.Flags, unit)
				}
				continue
			}
			m := map[string]map[string]map[string][]float64{"s": w.Secs, "cpu-s": w.CPU, "rss-MiB": w.RSS,
				"staging-MiB": w.Staging, "calls": w.Calls, "cs": w.Switches, "migrations": w.Migrations,
				"execs": w.Execs, "forks": w.Forks, "commit-s": w.Commit, "staged": w.Staged,
				"fdreplies": w.FDReplies, "handle-s": w.Handle, "reply-s": w.Reply, "supcpu-s": w.SupCPU}[qty]
			if m[phase] == nil {
				m[phase] = map[string][]float64{}
			}
			m[phase][mode] = vs
			if !slices.Contains(seen, phase) {
				seen = append(seen, phase)
			}
		}
		if j, err := strconv.Atoi(r.Header["jobs-"+name]); err == nil && j > 1 {
			w.Jobs = j
		}
		// The order the benchmark printed, then any phase it did not name.
		for _, p := range strings.Fields(r.Header["phases-"+name]) {
			if slices.Contains(seen, p) {
				w.Phases = append(w.Phases, p)
			}
		}
		for _, p := range seen {
			if !slices.Contains(w.Phases, p) {
				w.Phases = append(w.Phases, p)
			}
		}
		ws = append(ws, w)
	}
	return ws
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Total returns mode's time of all phases together, one value per round,
// or nil if some phase lacks a round.
func (w *Workload) Total(mode string) []float64 { return w.total(w.Secs, mode) }

func (w *Workload) total(m map[string]map[string][]float64, mode string) []float64 {
	var total []float64
	for i, p := range w.Phases {
		vs := m[p][mode]
		if i == 0 {
			total = make([]float64, len(vs))
		}
		if len(vs) != len(total) || len(vs) == 0 {
			return nil
		}
		for j, v := range vs {
			total[j] += v
		}
	}
	return total
}

// times returns m's values (Secs or CPU) of phase in mode, one per round;
// phase "" is all phases together.
func (w *Workload) times(m map[string]map[string][]float64, phase, mode string) []float64 {
	if phase == "" {
		return w.total(m, mode)
	}
	return m[phase][mode]
}

// Peak returns, per round, the largest value over the phases of m (RSS or
// Staging) in mode, and the phase of the largest median.
func (w *Workload) Peak(m map[string]map[string][]float64, mode string) (peaks []float64, phase string) {
	best := math.Inf(-1)
	for _, p := range w.Phases {
		vs := m[p][mode]
		if len(vs) == 0 {
			continue
		}
		if peaks == nil {
			peaks = slices.Clone(vs)
		} else if len(vs) == len(peaks) {
			for i, v := range vs {
				peaks[i] = max(peaks[i], v)
			}
		} else {
			return nil, ""
		}
		if med := medianOf(vs); med > best {
			best, phase = med, p
		}
	}
	return peaks, phase
}

// medianOf is the median of vs, NaN if there are none.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// maxOf is the largest of vs, NaN if there are none.
func maxOf(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	return slices.Max(vs)
}

// ratioOf is the median over rounds of a[i] / b[i] when a and b have one
// value per round each (the two runs of a round were taken seconds apart,
// so their ratio is steadier than either), else the ratio of the medians.
func ratioOf(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	if len(a) != len(b) {
		return medianOf(a) / medianOf(b)
	}
	rs := make([]float64, len(a))
	for i := range a {
		rs[i] = a[i] / b[i]
	}
	return medianOf(rs)
}

// Ratio is ratioOf mode's and base's times of phase ("" = all phases).
func (w *Workload) Ratio(phase, mode, base string) float64 {
	return ratioOf(w.times(w.Secs, phase, mode), w.times(w.Secs, phase, base))
}

// CPURatio is Ratio of the CPU times.
func (w *Workload) CPURatio(phase, mode, base string) float64 {
	return ratioOf(w.times(w.CPU, phase, mode), w.times(w.CPU, phase, base))
}

// RatioRange is the smallest and the largest ratio of one round, NaN when
// the samples are not one per round.
func (w *Workload) RatioRange(phase, mode, base string) (lo, hi float64) {
	a, b := w.times(w.Secs, phase, mode), w.times(w.Secs, phase, base)
	if len(a) == 0 || len(a) != len(b) {
		return math.NaN(), math.NaN()
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range a {
		lo, hi = min(lo, a[i]/b[i]), max(hi, a[i]/b[i])
	}
	return lo, hi
}

// BestRatio is the ratio of the best (shortest) times over the rounds:
// other load on the machine only ever adds time, so the best time of each
// is the one it disturbed least.
func (w *Workload) BestRatio(phase, mode, base string) float64 {
	a, b := w.times(w.Secs, phase, mode), w.times(w.Secs, phase, base)
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	return slices.Min(a) / slices.Min(b)
}

// Rounds is how many rounds measured the workload.
func (w *Workload) Rounds() int {
	n := 0
	for _, p := range w.Phases {
		n = max(n, len(w.Secs[p][modeNative]))
	}
	return n
}

func findWorkload(ws []Workload, name string) *Workload {
	for i := range ws {
		if ws[i].Name == name {
			return &ws[i]
		}
	}
	return nil
}

func secs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 0.1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func mib(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.1f", v)
}

func ratioX(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}

// rows are the workload's table rows: its phases, then "" (all of them)
// if there are several.
func (w *Workload) rows() []string {
	rows := slices.Clone(w.Phases)
	if len(rows) > 1 {
		rows = append(rows, "")
	}
	return rows
}

// rowNames are the first two cells of row ph.
func (w *Workload) rowNames(ph string) (name, phase string) {
	if ph == "" {
		return "**" + w.Title + "**", "**all**"
	}
	return w.Title, ph
}

// workloads are the workload, ratio and memory tables.
type workloads struct {
	Rounds int
	// Described are the workloads that say what they run; What without
	// its final period.
	Described             []Workload
	Times, Ratios, Memory [][]string
	// BuiltDeb are the descriptions of dpkg workloads that installed a
	// package of their own making (no download).
	BuiltDeb []string
}

// newWorkloads computes the workload tables, nil if none ran.
func newWorkloads(ws []Workload) *workloads {
	if len(ws) == 0 {
		return nil
	}
	t := &workloads{}
	for _, wl := range ws {
		t.Rounds = max(t.Rounds, wl.Rounds())
		if wl.What != "" {
			d := wl
			d.What = strings.TrimSuffix(wl.What, ".")
			t.Described = append(t.Described, d)
		}
	}
	for _, wl := range ws {
		for _, ph := range wl.rows() {
			name, phase := wl.rowNames(ph)
			row := []string{name, phase}
			for _, m := range wlModes {
				row = append(row, secs(medianOf(wl.times(wl.Secs, ph, m))))
			}
			t.Times = append(t.Times, row)
		}
	}
	for _, wl := range ws {
		for _, ph := range wl.rows() {
			name, phase := wl.rowNames(ph)
			txos := ""
			if ph == "" || len(wl.Phases) == 1 {
				txos = wl.TxOS
			}
			lo, hi := wl.RatioRange(ph, modeDurable, modeNative)
			t.Ratios = append(t.Ratios, []string{name, phase,
				ratioX(wl.Ratio(ph, modePassthrough, modeNative)), ratioX(wl.Ratio(ph, modePassthroughFast, modeNative)),
				ratioX(wl.Ratio(ph, modeACI, modeNative)), ratioX(wl.Ratio(ph, modeDurable, modeNative)), ratioX(wl.Ratio(ph, modeDurableFast, modeNative)),
				ratioX(lo) + "–" + ratioX(hi), ratioX(wl.BestRatio(ph, modeDurable, modeNative)),
				ratioX(wl.Ratio(ph, modeDurable, modeNativeSync)), ratioX(wl.CPURatio(ph, modeACI, modeNative)),
				ratioX(wl.CPURatio(ph, modeDurable, modeNative)), txos})
		}
	}
	for _, wl := range ws {
		if slices.Contains(wl.Flags, "built-deb") {
			t.BuiltDeb = append(t.BuiltDeb, wl.What)
		}
	}
	for _, wl := range ws {
		row := []string{wl.Title}
		for _, m := range []string{modePassthrough, modeACI, modeDurable} {
			peaks, _ := wl.Peak(wl.RSS, m)
			row = append(row, mib(medianOf(peaks))+" / "+mib(maxOf(peaks)))
		}
		var phase string
		for _, m := range []string{modeACI, modeDurable} {
			var peaks []float64
			peaks, phase = wl.Peak(wl.Staging, m)
			row = append(row, mib(medianOf(peaks))+" / "+mib(maxOf(peaks)))
		}
		t.Memory = append(t.Memory, append(row, phase))
	}
	return t
}

// workloadTargets are the issue-7 targets of the workloads.
type workloadTargets struct {
	Ratios []ratioTarget
	LFS    *lfsTarget
	RSS    *rssTarget
}

// ratioTarget is a workload's time against native, all phases together.
type ratioTarget struct {
	What     string
	Target   float64
	Measured bool
	// Default is the mode the target is judged on: txexec's default,
	// durable with the fast path (durable+fast), or durable in a run
	// without that mode (results from before the fast path).
	Default string
	// Durable, Lo and Hi (its range over the rounds), Best (of the best
	// times) and CPU (of CPU times) are the default mode's ratios to
	// native; Served (durable with every trapped call served, without the
	// fast path), ACI, BestACI, Passthrough and PassthroughFast the other
	// modes'.
	Durable, Lo, Hi, Best, CPU, Served, ACI, BestACI, Passthrough, PassthroughFast float64
	Verdict                                                                        string
	// HasFloor: the run counted the workload's trapped calls and measured
	// the floor; Calls of them alone at the floor would make it FloorRatio
	// of native, leaving Left (target − FloorRatio) for txexec's own work.
	HasFloor                bool
	Calls, FloorRatio, Left float64
}

// lfsTarget is descriptor I/O near native on whole LFS-large runs.
type lfsTarget struct {
	Target float64
	Phases []lfsPhase
	Met    bool
	// HasTrue: the empty transaction ran; Fixed is its cost over native
	// true, SeqRead native's sequential read (s).
	HasTrue        bool
	Fixed, SeqRead float64
}

type lfsPhase struct {
	Phase        string
	ACI, Durable float64
}

// rssTarget is the supervisor's peak RSS on the dpkg and build workloads.
type rssTarget struct {
	Target    int
	Workloads []rssWorkload
	Met       bool
}

type rssWorkload struct {
	Title string
	Worst float64
}

// Targets of issue 7 for the workloads.
const (
	targetBuildRatio = 1.25
	targetDpkgRatio  = 1.5
	targetRSSMiB     = 64
)

// newWorkloadTargets computes for each issue-7 workload target whether
// this run met it.
//
// floor and native (ns) are the bare C supervisor's fstatat and a native
// one, as for newCallBudget: each workload target is also compared with
// what the round trips of the workload's trapped calls alone give, so that
// the report says when a target is out of reach of any supervisor that
// traps those calls, not only that it was missed.
func newWorkloadTargets(ws []Workload, floor, native float64) workloadTargets {
	var t workloadTargets
	perCall := floorSecsPerCall(floor, native)
	for _, def := range []struct {
		name, what string
		target     float64
	}{
		{"build", "Parallel C build", targetBuildRatio},
		{"dpkg", "dpkg -i + -r", targetDpkgRatio},
	} {
		rt := ratioTarget{What: def.what, Target: def.target}
		if wl := findWorkload(ws, def.name); wl != nil {
			rt.Measured = true
			rt.Default = modeDurableFast
			if math.IsNaN(wl.Ratio("", modeDurableFast, modeNative)) {
				rt.Default = modeDurable
			}
			rt.Durable, rt.ACI = wl.Ratio("", rt.Default, modeNative), wl.Ratio("", modeACI, modeNative)
			rt.Lo, rt.Hi = wl.RatioRange("", rt.Default, modeNative)
			rt.Best, rt.BestACI = wl.BestRatio("", rt.Default, modeNative), wl.BestRatio("", modeACI, modeNative)
			rt.CPU = wl.CPURatio("", rt.Default, modeNative)
			rt.Served = wl.Ratio("", modeDurable, modeNative)
			rt.Passthrough = wl.Ratio("", modePassthrough, modeNative)
			rt.PassthroughFast = wl.Ratio("", modePassthroughFast, modeNative)
			rt.Verdict = noisyVerdict(rt.Durable, rt.Best, def.target)
			rt.FloorRatio, rt.Calls, _, rt.HasFloor = wl.floorRatio("", perCall)
			rt.Left = def.target - rt.FloorRatio
		}
		t.Ratios = append(t.Ratios, rt)
	}
	if wl := findWorkload(ws, "lfs-large"); wl != nil {
		lfs := &lfsTarget{Target: targetIORatio}
		var worst float64
		for _, ph := range wl.Phases {
			a := wl.Ratio(ph, modeACI, modeNative)
			lfs.Phases = append(lfs.Phases, lfsPhase{Phase: ph, ACI: a, Durable: wl.Ratio(ph, modeDurable, modeNative)})
			worst = max(worst, a)
		}
		lfs.Met = worst <= targetIORatio
		if tr := findWorkload(ws, "true"); tr != nil {
			lfs.HasTrue = true
			lfs.Fixed = medianOf(tr.Secs["true"][modeACI]) - medianOf(tr.Secs["true"][modeNative])
			lfs.SeqRead = medianOf(wl.Secs["seqread"][modeNative])
		}
		t.LFS = lfs
	}
	rss := &rssTarget{Target: targetRSSMiB, Met: true}
	for _, name := range []string{"dpkg", "build"} {
		wl := findWorkload(ws, name)
		if wl == nil {
			rss.Met = false
			continue
		}
		worst := 0.0
		for _, m := range []string{modePassthrough, modeACI, modeDurable} {
			peaks, _ := wl.Peak(wl.RSS, m)
			worst = max(worst, maxOf(peaks))
		}
		rss.Met = rss.Met && worst <= targetRSSMiB
		rss.Workloads = append(rss.Workloads, rssWorkload{Title: wl.Title, Worst: worst})
	}
	if len(rss.Workloads) > 0 {
		t.RSS = rss
	}
	return t
}

// noisyVerdict says whether a target was met by both the median ratio and
// the ratio of best times ("met"), by one of them only ("unclear": the run
// could not tell) or by neither ("not met").
func noisyVerdict(median, best, target float64) string {
	switch {
	case median <= target && best <= target:
		return "met"
	case median <= target || best <= target:
		return "unclear"
	}
	return "not met"
}

// workloadChart is the ratio of every phase (and of each workload as a
// whole) to native, per txexec mode.
func workloadChart(ws []Workload) *barChart {
	c := &barChart{Title: "Workloads: time / native (median of rounds)", Series: []string{"passthrough", "ACI", "durable"}, Ref: 1}
	for _, wl := range ws {
		for _, ph := range wl.rows() {
			label := wl.Name + " " + ph
			if ph == "" {
				label = wl.Name + " all"
			} else if len(wl.Phases) == 1 && ph == wl.Name {
				label = wl.Name
			}
			c.Groups = append(c.Groups, barGroup{Label: label, Values: []float64{
				wl.Ratio(ph, modePassthrough, modeNative), wl.Ratio(ph, modeACI, modeNative), wl.Ratio(ph, modeDurable, modeNative)}})
		}
	}
	return c
}

// floorSecsPerCall is what the bare C supervisor's round trip adds to one
// call, in s, from its fstatat and a native one (ns, same run); NaN when
// the run did not measure a positive difference.
func floorSecsPerCall(floor, native float64) float64 {
	if d := (floor - native) / 1e9; d > 0 {
		return d
	}
	return math.NaN()
}

// floorRatio is what the round trips of its trapped calls alone would make
// phase of the workload ("" for all phases) over native: (native s +
// calls × perCall s) / native s, each the median over the rounds; ok is
// false when the run counted no calls or measured no floor.
func (wl *Workload) floorRatio(phase string, perCall float64) (ratio, calls, native float64, ok bool) {
	cs, nat := wl.times(wl.Calls, phase, modeDurable), medianOf(wl.times(wl.Secs, phase, modeNative))
	if len(cs) == 0 || math.IsNaN(perCall) || !(nat > 0) {
		return 0, 0, 0, false
	}
	calls = medianOf(cs)
	return (nat + calls*perCall) / nat, calls, nat, true
}

// callBudget is how much of each workload's time under txexec the round
// trips of its trapped calls alone account for: the calls the supervisor
// answered (TXEXEC_STATS trapped_calls, durable mode) times what the bare
// C supervisor adds to a call (its fstatat round trip less a native
// fstatat, both measured in this run). That is a floor no supervisor that
// traps the same calls can go below; the rest of the overhead is txexec's
// own (handlers, ptrace of fork and exec, commit).
type callBudget struct {
	// Floor and Native are the fstatat round trip and a native one, Added
	// their difference (ns).
	Floor, Native, Added float64
	Rows                 [][]string
}

// newCallBudget computes the trapped-call table, nil when no run counted
// calls or the floor was not measured above native.
func newCallBudget(ws []Workload, floor, native float64) *callBudget {
	perCall := floorSecsPerCall(floor, native)
	counted := false
	for _, wl := range ws {
		for _, ph := range wl.Phases {
			if len(wl.Calls[ph][modeDurable]) > 0 {
				counted = true
			}
		}
	}
	if !counted || math.IsNaN(perCall) {
		return nil
	}
	b := &callBudget{Floor: floor, Native: native, Added: floor - native}
	for _, wl := range ws {
		for _, ph := range wl.rows() {
			fr, c, nat, ok := wl.floorRatio(ph, perCall)
			if !ok {
				continue
			}
			dur := medianOf(wl.times(wl.Secs, ph, modeDurable))
			name, phase := wl.rowNames(ph)
			b.Rows = append(b.Rows, []string{name, phase, fmt.Sprintf("%.0f", c), secs(nat), secs(dur),
				secs(dur - nat), secs(c * perCall), ratioX(fr), ratioX(wl.Ratio(ph, modeDurable, modeNative))})
		}
	}
	return b
}
