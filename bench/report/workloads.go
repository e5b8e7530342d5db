package main

import (
	"fmt"
	"io"
	"math"
	"slices"
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
	modeACI         = "aci"
	modeDurable     = "durable"
)

var wlModes = []string{modeNative, modeNativeSync, modePassthrough, modeACI, modeDurable}

// Workload is one BenchmarkWorkload benchmark's results.
type Workload struct {
	Name, Title, What, TxOS string
	// Phases in the order they ran.
	Phases []string
	// Secs (wall time), CPU (seconds of the command's tree and txexec),
	// RSS (MiB), Staging (MiB) and Calls (system calls the supervisor
	// answered) map phase → mode → one value per round.
	Secs, CPU, RSS, Staging, Calls map[string]map[string][]float64
	// Flags are the metrics reported as 1 (which variant ran: apt-hello).
	Flags []string
}

// workloadUnit splits a BenchmarkWorkload metric unit "PHASE/MODE-QTY"
// (QTY one of s, cpu-s, rss-MiB, staging-MiB, calls).
func workloadUnit(unit string) (phase, mode, qty string, ok bool) {
	phase, rest, ok := strings.Cut(unit, "/")
	if !ok {
		return "", "", "", false
	}
	for _, q := range []string{"rss-MiB", "staging-MiB", "cpu-s", "calls", "s"} {
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
		w := Workload{Name: name, Title: name, What: r.Header["workload-"+name],
			Secs: map[string]map[string][]float64{}, CPU: map[string]map[string][]float64{},
			RSS: map[string]map[string][]float64{}, Staging: map[string]map[string][]float64{},
			Calls: map[string]map[string][]float64{}}
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
			m := map[string]map[string]map[string][]float64{"s": w.Secs, "cpu-s": w.CPU, "rss-MiB": w.RSS, "staging-MiB": w.Staging, "calls": w.Calls}[qty]
			if m[phase] == nil {
				m[phase] = map[string][]float64{}
			}
			m[phase][mode] = vs
			if !slices.Contains(seen, phase) {
				seen = append(seen, phase)
			}
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

// writeWorkloads renders the workload and memory tables.
func writeWorkloads(w io.Writer, ws []Workload) {
	if len(ws) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	rounds := 0
	for _, wl := range ws {
		rounds = max(rounds, wl.Rounds())
	}
	p("## Workloads\n\n")
	p("Whole programs, each phase one command and under txexec one transaction, timed from start\n")
	p("to exit — txexec's start-up and commit included — natively, natively followed by `syncfs`\n")
	p("(native+sync: the data on disk, as a durable commit leaves it), under `txexec --passthrough`,\n")
	p("under `txexec --no-durable` (ACI) and under `txexec` (durable, the default), in work and state\n")
	p("directories on a disk file system (BenchmarkWorkload; see Method). Seconds are medians over\n")
	p("the %d rounds.\n\n", rounds)
	for _, wl := range ws {
		if wl.What != "" {
			p("- **%s** (%s): %s.\n", wl.Title, wl.Name, strings.TrimSuffix(wl.What, "."))
		}
	}
	p("\n")
	p("| workload | phase | native s | native+sync s | passthrough s | ACI s | durable s |\n")
	p("|---|---|--:|--:|--:|--:|--:|\n")
	for _, wl := range ws {
		for _, ph := range wl.rows() {
			var cells []string
			for _, m := range wlModes {
				cells = append(cells, secs(medianOf(wl.times(wl.Secs, ph, m))))
			}
			name, phase := wl.rowNames(ph)
			p("| %s | %s | %s |\n", name, phase, strings.Join(cells, " | "))
		}
	}
	p("\n")
	p("The ratios, each the median over the rounds of the ratio within a round; then, because this\n")
	p("shared machine's load varies from minute to minute, the smallest and largest ratio of a\n")
	p("round, the ratio of the best (shortest) times over the rounds, and the ratio of CPU time\n")
	p("(user + system of the command's processes, and of txexec's under txexec):\n\n")
	p("| workload | phase | passthrough / native | ACI / native | durable / native | durable / native, range over rounds | durable / native, best times | durable / native+sync | CPU: ACI / native | CPU: durable / native | TxOS |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, wl := range ws {
		for _, ph := range wl.rows() {
			name, phase := wl.rowNames(ph)
			txos := ""
			if ph == "" || len(wl.Phases) == 1 {
				txos = wl.TxOS
			}
			lo, hi := wl.RatioRange(ph, modeDurable, modeNative)
			p("| %s | %s | %s | %s | %s | %s–%s | %s | %s | %s | %s | %s |\n", name, phase,
				ratioX(wl.Ratio(ph, modePassthrough, modeNative)), ratioX(wl.Ratio(ph, modeACI, modeNative)),
				ratioX(wl.Ratio(ph, modeDurable, modeNative)), ratioX(lo), ratioX(hi), ratioX(wl.BestRatio(ph, modeDurable, modeNative)),
				ratioX(wl.Ratio(ph, modeDurable, modeNativeSync)), ratioX(wl.CPURatio(ph, modeACI, modeNative)),
				ratioX(wl.CPURatio(ph, modeDurable, modeNative)), txos)
		}
	}
	p("\n")
	p("TxOS figures are those issue 7 quotes from the paper (its table of whole-program overheads);\n")
	p("the paper's LFS and RAB figures are not reproduced here.\n\n")
	for _, wl := range ws {
		if slices.Contains(wl.Flags, "built-deb") {
			p("**Note:** apt-get could not download Debian's hello on this run (no network?): the dpkg\n")
			p("workload installed a package built with dpkg-deb instead (%s).\n\n", wl.What)
		}
	}

	p("## Supervisor memory and staging disk use\n\n")
	p("txexec's own peak RSS (VmHWM, read by txexec itself at exit: `TXEXEC_STATS`, see Method; not\n")
	p("the command's processes) and the disk its transaction's staging directory used just before\n")
	p("commit, for the phase where each is largest: median over the rounds / largest of any round.\n\n")
	p("| workload | RSS passthrough MiB | RSS ACI MiB | RSS durable MiB | staging ACI MiB | staging durable MiB | largest staging in |\n")
	p("|---|--:|--:|--:|--:|--:|---|\n")
	for _, wl := range ws {
		var cells []string
		for _, m := range []string{modePassthrough, modeACI, modeDurable} {
			peaks, _ := wl.Peak(wl.RSS, m)
			cells = append(cells, mib(medianOf(peaks))+" / "+mib(maxOf(peaks)))
		}
		var phase string
		for _, m := range []string{modeACI, modeDurable} {
			var peaks []float64
			peaks, phase = wl.Peak(wl.Staging, m)
			cells = append(cells, mib(medianOf(peaks))+" / "+mib(maxOf(peaks)))
		}
		p("| %s | %s | %s |\n", wl.Title, strings.Join(cells, " | "), phase)
	}
	p("\n")
}

// Targets of issue 7 for the workloads.
const (
	targetBuildRatio = 1.25
	targetDpkgRatio  = 1.5
	targetRSSMiB     = 64
)

// writeWorkloadTargets states for each issue-7 workload target whether
// this run met it.
//
// floor and native (ns) are the bare C supervisor's fstatat and a native
// one, as for writeCallBudget: each workload target is also compared with
// what the round trips of the workload's trapped calls alone give, so that
// the report says when a target is out of reach of any supervisor that
// traps those calls, not only that it was missed.
func writeWorkloadTargets(w io.Writer, ws []Workload, floor, native float64) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	perCall := floorSecsPerCall(floor, native)
	for _, t := range []struct {
		name, what string
		target     float64
	}{
		{"build", "Parallel C build", targetBuildRatio},
		{"dpkg", "dpkg -i + -r", targetDpkgRatio},
	} {
		wl := findWorkload(ws, t.name)
		if wl == nil {
			p("- %s ≤ %.2f× native: not measured in this run.\n", t.what, t.target)
			continue
		}
		d, a := wl.Ratio("", modeDurable, modeNative), wl.Ratio("", modeACI, modeNative)
		lo, hi := wl.RatioRange("", modeDurable, modeNative)
		best, bestACI := wl.BestRatio("", modeDurable, modeNative), wl.BestRatio("", modeACI, modeNative)
		p("- %s ≤ %.2f× native: %s× durable (the default; rounds %s–%s, best times %s×, CPU time %s×),\n", t.what, t.target,
			ratioX(d), ratioX(lo), ratioX(hi), ratioX(best), ratioX(wl.CPURatio("", modeDurable, modeNative)))
		p("  %s× ACI (best times %s×), %s× passthrough. %s\n", ratioX(a), ratioX(bestACI),
			ratioX(wl.Ratio("", modePassthrough, modeNative)), noisyVerdict(d, best, t.target))
		if fr, calls, _, ok := wl.floorRatio("", perCall); ok {
			p("  The round trips of its %.0f trapped calls alone, at the floor, would make it %s× native", calls, ratioX(fr))
			switch left := t.target - fr; {
			case left <= 0:
				p(":\n  the target is out of reach of any supervisor that traps these calls on this machine.\n")
			case left < 0.05:
				p(",\n  leaving less than 5%% of native time for all of txexec's own work (handlers, fork and exec,\n")
				p("  staging, commit): out of reach in practice of a supervisor that traps these calls.\n")
			default:
				p(", leaving %s× of native for all of txexec's own work.\n", ratioX(left))
			}
		}
	}
	if wl := findWorkload(ws, "lfs-large"); wl != nil {
		p("- Descriptor I/O ≤ %.2f× native, on whole LFS-large runs (ACI / durable):", targetIORatio)
		var worst float64
		var parts []string
		for _, ph := range wl.Phases {
			a := wl.Ratio(ph, modeACI, modeNative)
			parts = append(parts, fmt.Sprintf("%s %s / %s×", ph, ratioX(a), ratioX(wl.Ratio(ph, modeDurable, modeNative))))
			worst = max(worst, a)
		}
		p(" %s. %s\n", strings.Join(parts, "; "), verdict(worst <= targetIORatio))
		if tr := findWorkload(ws, "true"); tr != nil {
			fixed := medianOf(tr.Secs["true"][modeACI]) - medianOf(tr.Secs["true"][modeNative])
			p("  Each run includes txexec's fixed cost — starting, and committing an empty transaction takes\n")
			p("  %s s more than native `true` — against %s s for native's sequential read of the whole file\n",
				secs(fixed), secs(medianOf(wl.Secs["seqread"][modeNative])))
			p("  from the page cache; the writes also copy the file into the staging area (the random\n")
			p("  write: a copy-up of the whole file first) and rename it at commit. The read and write\n")
			p("  calls themselves are the per-call table's.\n")
		}
	}
	var rss []string
	ok, measured := true, false
	for _, name := range []string{"dpkg", "build"} {
		wl := findWorkload(ws, name)
		if wl == nil {
			ok = false
			continue
		}
		worst := 0.0
		for _, m := range []string{modePassthrough, modeACI, modeDurable} {
			peaks, _ := wl.Peak(wl.RSS, m)
			worst = max(worst, maxOf(peaks))
		}
		measured = true
		ok = ok && worst <= targetRSSMiB
		rss = append(rss, fmt.Sprintf("%s %s MiB", wl.Title, mib(worst)))
	}
	if measured {
		p("- Supervisor peak RSS ≤ %d MiB on the dpkg and build workloads (largest of any phase, mode and\n", targetRSSMiB)
		p("  round): %s. %s\n", strings.Join(rss, ", "), verdict(ok))
	}
}

// noisyVerdict says whether a target was met by both the median ratio and
// the ratio of best times; when they disagree the run could not tell.
func noisyVerdict(median, best, target float64) string {
	switch {
	case median <= target && best <= target:
		return "**Met.**"
	case median <= target || best <= target:
		return "**Unclear**: met by one of the median and best-times ratios, not the other — the machine's load varied too much during the run to tell."
	}
	return "**Not met.**"
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

// writeCallBudget renders how much of each workload's time under txexec
// the round trips of its trapped calls alone account for: the calls the
// supervisor answered (TXEXEC_STATS trapped_calls, durable mode) times
// what the bare C supervisor adds to a call (its fstatat round trip less
// a native fstatat, both measured in this run). That is a floor no
// supervisor that traps the same calls can go below; the rest of the
// overhead is txexec's own (handlers, ptrace of fork and exec, commit).
func writeCallBudget(w io.Writer, ws []Workload, floor, native float64) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
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
		return
	}
	p("## Trapped calls and the round-trip floor\n\n")
	p("Every path call of the command tree (open, stat, readlink, access, getdents, exec, …) is\n")
	p("trapped and answered by the supervisor. The bare C supervisor of the floor adds %s µs to a\n", us(floor-native))
	p("call over a native fstatat (%s µs − %s µs, this run). The calls each phase made under\n", us(floor), us(native))
	p("txexec (durable, median over the rounds; `TXEXEC_STATS` trapped_calls) times that is what\n")
	p("the round trips alone cost a process making them one after another; the next column is\n")
	p("the ratio native time plus that would give. No interposer that traps the same calls does\n")
	p("better unless the calls overlap on spare CPUs (the build's `make -j2` has none here: both\n")
	p("CPUs are busy compiling). The rest of the measured overhead is txexec's own: handlers,\n")
	p("ptrace stops at fork and exec, staging and commit.\n\n")
	p("| workload | phase | trapped calls | native s | durable s | overhead s | calls × floor s | (native + calls × floor) / native | durable / native |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, wl := range ws {
		for _, ph := range wl.rows() {
			fr, c, nat, ok := wl.floorRatio(ph, perCall)
			if !ok {
				continue
			}
			dur := medianOf(wl.times(wl.Secs, ph, modeDurable))
			name, phase := wl.rowNames(ph)
			p("| %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", name, phase, c, secs(nat), secs(dur),
				secs(dur-nat), secs(c*perCall), ratioX(fr), ratioX(wl.Ratio(ph, modeDurable, modeNative)))
		}
	}
	p("\n")
	writeCallSources(w)
}

// writeCallSources says where the trapped calls of the two workloads with
// targets come from and what, besides the round trips, each costs. These
// are findings of one investigation (2026-11-23, this machine), not
// numbers of the run: strace -f -c of native runs, perf stat of whole
// runs, perf record -a of dpkg -i.
func writeCallSources(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("Where these calls come from, and what they cost beyond the round trip (an investigation\n")
	p("of 2026-11-23 on this machine, not measurements of this run):\n\n")
	p("- **The build** makes about two thirds of its calls through glibc's `realpath`, which\n")
	p("  cc1 and the driver run on include and library directories: `strace -f -c` of a native\n")
	p("  `make -j2` counts 65,331 readlink calls, 99%% of them failing with EINVAL (not a\n")
	p("  symlink; `/usr` alone 12,392 times), against 16,360 openat and 12,223 newfstatat. Each\n")
	p("  is a path the view must resolve, so each is trapped; a readlink in a transaction costs\n")
	p("  15–16 µs against 13.9 µs for the floor that day, so there is little left in the handler to take.\n")
	p("- **dpkg** spends nearly all of its overhead in man-db's trigger: `mandb` took 2.6 s\n")
	p("  natively and 8.0 s in a transaction (`perf record` of process lifetimes). It makes six\n")
	p("  path calls for each of the 17,850 pages of /usr/share/man/man1 (lstat, stat, open,\n")
	p("  stat, stat, open), 107,000 of dpkg -i's 134,000 trapped calls.\n")
	p("- **What a trapped call costs a real program** exceeds what it costs the benchmark\n")
	p("  loop. `perf stat` of dpkg -i in a transaction counted 3.9 context switches and 0.5\n")
	p("  CPU migrations per trapped call, against 2.1 and almost none for a loop of stat calls:\n")
	p("  a program that computes between calls lets its CPU's supervisor thread sleep, and an\n")
	p("  open's descriptor reply (ADDFD) ends with a wake-up the kernel may send to the other,\n")
	p("  halted, vCPU. The traced program's own code also runs slower after each round trip,\n")
	p("  its caches refilled: mandb's user-space samples grew from 1,872 natively to 2,295 in a\n")
	p("  transaction (`perf record -F 999 -a`), 23%% more time in its own code. A C loop of stat\n")
	p("  calls in a transaction, with 0 to 100 µs of busy work after each, showed the overhead per\n")
	p("  call grow from about 20 µs with no gap to 25–30 µs (20,000 calls a run).\n")
	p("- **Of txexec's own work**, one item stands out under dpkg: a changed directory's size comes\n")
	p("  from a mirror of its names (docs/semantics.md, \"directory sizes\"), one hard link per name,\n")
	p("  made at its first stat. A stat of man1 after one change took 0.45 s, against 0.03 s for a\n")
	p("  stat of its parent (3 runs each); dpkg -i and -r each pay it once.\n")
	p("- **An allow-all seccomp filter alone**, measured apart (bench/percall.c with and without `-F`,\n")
	p("  200,000 calls a run, 5 alternating runs, medians): read of 4 KiB 0.86 → 0.98 µs (1.14×),\n")
	p("  write 1.12 → 1.22 µs (1.09×).\n\n")
	p("Tried and not kept (same investigation; a C loop of stat and open with 30 µs of busy work\n")
	p("after each pair, 3 alternating runs of each variant, and dpkg -i in a transaction):\n\n")
	p("- Never handing the receiving position over while an open's ADDFD reply waits (step 5\n")
	p("  below): the loop took 73–77 µs per pair against 81–89 µs, but dpkg -i took 8.45, 7.26,\n")
	p("  7.25 s against 8.23, 7.82, 7.18 s, and loops with no gap were mixed.\n")
	p("- Pinning the replying worker to its CPU during the ADDFD wait (sched_setaffinity around\n")
	p("  the reply), so that the wake-up ending it cannot go to the idle vCPU: a loop of opens\n")
	p("  alone slowed from 18.7–21.0 to 28.0–29.0 µs per call, the stat-and-open loop with a gap\n")
	p("  went from about 78 to 73 µs.\n\n")
}
