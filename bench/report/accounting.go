package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Targets of issue 17.
const (
	// targetGapRatio: txexec's overhead per call at most this many times
	// the bare C floor's, at every gap.
	targetGapRatio = 1.3
	// targetSwitches: context switches per trapped call of dpkg and the
	// build under txexec.
	targetSwitches = 2.3
	// targetEffective: a workload's overhead per trapped call at most this
	// many times the floor's at the workload's gap.
	targetEffective = 1.5
)

// gapPoint is one gap of BenchmarkFloorGap: the gap's length and each
// mode's overhead per call over its native loop (ns), and the context
// switches and migrations per call (NaN when not counted).
type gapPoint struct {
	Name string
	// Nominal is the gap the benchmark asked for (ns), Gap the CPU loop's
	// time measured alone: the table shows both, interpolation uses the
	// nominal one, which noise on the machine does not move.
	Nominal, Gap, Native      float64
	Floor, Passthrough, Tx    float64
	SwitchFloor, SwitchPT     float64
	SwitchTx, SwitchNative    float64
	MigrFloor, MigrPT, MigrTx float64
	MigrNative                float64
	// Handle is the workers' time per call in the transaction's handlers
	// (TXEXEC_STATS handle_ns), NaN when not measured.
	Handle float64
}

// floorGaps is the floor-with-gaps table and its target.
type floorGaps struct {
	Points []gapPoint
	Rows   [][]string
	// Counter says how switches were counted (the benchmark's
	// "switch-counter:" line); Switches and Migrations whether they were.
	Counter              string
	Switches, Migrations bool
	Target               float64
	Met                  bool
	// Worst is the largest txexec / floor ratio, at WorstGap in WorstMode.
	Worst               float64
	WorstGap, WorstMode string
	// NoRatio are the gaps (µs) where the floor's overhead came out not
	// positive (noise): no ratio, and the target not met.
	NoRatio []int
}

// subNames are the names of the sub-benchmarks of a benchmark (prefix
// "Name/"), the first level below it, in the order of the run ("0us",
// "10us" for BenchmarkFloorGap/0us/native...).
func (r *Results) subNames(prefix string) []string {
	var names []string
	for _, n := range r.Order {
		if rest, ok := strings.CutPrefix(n, prefix); ok {
			if g, _, ok := strings.Cut(rest, "/"); ok && !slices.Contains(names, g) {
				names = append(names, g)
			}
		}
	}
	return names
}

// newFloorGaps is BenchmarkFloorGap's table, nil if it did not run.
func newFloorGaps(r *Results) *floorGaps {
	names := r.subNames("FloorGap/")
	if len(names) == 0 {
		return nil
	}
	fg := &floorGaps{Counter: r.Header["switch-counter"], Target: targetGapRatio, Met: true}
	for _, g := range names {
		at := func(mode, unit string) float64 { return r.MedianOrNaN("FloorGap/"+g+"/"+mode, unit) }
		ns := func(mode string) float64 { return at(mode, "ns/call") }
		nominal, err := strconv.Atoi(strings.TrimSuffix(g, "us"))
		if err != nil {
			continue
		}
		p := gapPoint{Name: g, Nominal: float64(nominal) * 1000, Gap: ns("gap"), Native: ns("native"),
			Floor: ns("floor") - ns("floor-native"), Passthrough: ns("passthrough") - ns("native"), Tx: ns("tx") - ns("native"),
			SwitchNative: at("native", "cs/call"), SwitchFloor: at("floor", "cs/call"), SwitchPT: at("passthrough", "cs/call"), SwitchTx: at("tx", "cs/call"),
			MigrFloor: at("floor", "migrations/call"), MigrPT: at("passthrough", "migrations/call"), MigrTx: at("tx", "migrations/call"), MigrNative: at("native", "migrations/call"),
			Handle: at("tx", "handle-ns/call")}
		if math.IsNaN(p.Floor + p.Passthrough + p.Tx) {
			fg.Met = false
			continue
		}
		fg.Points = append(fg.Points, p)
		fg.Switches = fg.Switches || !math.IsNaN(p.SwitchFloor)
		fg.Migrations = fg.Migrations || !math.IsNaN(p.MigrFloor)
		for _, m := range []struct {
			name string
			v    float64
		}{{"passthrough", p.Passthrough}, {"in a transaction", p.Tx}} {
			ratio := overRatio(m.v, p.Floor)
			if !(ratio <= targetGapRatio) {
				fg.Met = false
			}
			if math.IsNaN(ratio) {
				if !slices.Contains(fg.NoRatio, nominal) {
					fg.NoRatio = append(fg.NoRatio, nominal)
				}
			} else if ratio > fg.Worst {
				fg.Worst, fg.WorstGap, fg.WorstMode = ratio, strings.TrimSuffix(g, "us"), m.name
			}
		}
	}
	if len(fg.Points) == 0 {
		return nil
	}
	slices.SortStableFunc(fg.Points, func(a, b gapPoint) int { return cmp.Compare(a.Nominal, b.Nominal) })
	for _, p := range fg.Points {
		row := []string{strings.TrimSuffix(p.Name, "us"), us(p.Gap), us(p.Native), us(p.Floor), us(p.Passthrough), us(p.Tx),
			ratioX(overRatio(p.Passthrough, p.Floor)), ratioX(overRatio(p.Tx, p.Floor))}
		if fg.Switches {
			row = append(row, perCall(p.SwitchNative)+" / "+perCall(p.SwitchFloor)+" / "+perCall(p.SwitchPT)+" / "+perCall(p.SwitchTx))
		}
		if fg.Migrations {
			row = append(row, perCall(p.MigrNative)+" / "+perCall(p.MigrFloor)+" / "+perCall(p.MigrPT)+" / "+perCall(p.MigrTx))
		}
		fg.Rows = append(fg.Rows, row)
	}
	return fg
}

// overRatio is overhead a over overhead b, NaN unless b is positive (the
// machine's noise can make a small overhead come out negative).
func overRatio(a, b float64) float64 {
	if !(b > 0) {
		return math.NaN()
	}
	return a / b
}

// perCall formats a count per call; a difference of counts that is
// negative by noise shows as 0.00.
func perCall(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f", math.Max(v, 0))
}

// at interpolates linearly between the nominal gaps the value that pick
// takes at a gap of gapNs, and holds the end values beyond them.
func (fg *floorGaps) at(gapNs float64, pick func(gapPoint) float64) float64 {
	if fg == nil {
		return math.NaN()
	}
	return interpolateAt(fg.Points, gapNs, func(p gapPoint) float64 { return p.Nominal }, pick)
}

// interpolateAt is pick's value at x over points ps sorted by at:
// interpolated linearly between the two points around x, the nearest
// point's outside them; NaN without points or x.
func interpolateAt[P any](ps []P, x float64, at, pick func(P) float64) float64 {
	if len(ps) == 0 || math.IsNaN(x) {
		return math.NaN()
	}
	if x <= at(ps[0]) {
		return pick(ps[0])
	}
	for i := 1; i < len(ps); i++ {
		if x <= at(ps[i]) {
			a, b := ps[i-1], ps[i]
			f := (x - at(a)) / (at(b) - at(a))
			return pick(a) + f*(pick(b)-pick(a))
		}
	}
	return pick(ps[len(ps)-1])
}

// workloadSwitches is the table of the workloads' context switches and
// CPU migrations per trapped call, natively and under txexec.
type workloadSwitches struct {
	Counter string
	// Empty is the empty transaction's switches (durable), not a row.
	Empty      string
	Migrations bool
	Rows       [][]string
	// Targets are dpkg's and the build's switches per trapped call under
	// txexec (durable), all phases together.
	Targets []switchTarget
}

type switchTarget struct {
	Title     string
	PerCall   float64
	Target    float64
	Met       bool
	NativePer float64
}

// newWorkloadSwitches is the switch table, nil when no run counted
// switches.
func newWorkloadSwitches(ws []Workload, counter string) *workloadSwitches {
	t := &workloadSwitches{Counter: counter}
	for _, wl := range ws {
		if wl.Name == "true" {
			t.Empty = count0(medianOf(wl.times(wl.Switches, "", modeDurable)))
			continue
		}
		for _, ph := range wl.rows() {
			calls := medianOf(wl.times(wl.Calls, ph, modeDurable))
			nat, dur := medianOf(wl.times(wl.Switches, ph, modeNative)), medianOf(wl.times(wl.Switches, ph, modeDurable))
			if math.IsNaN(dur) || !(calls > 0) {
				continue
			}
			mNat, mDur := medianOf(wl.times(wl.Migrations, ph, modeNative)), medianOf(wl.times(wl.Migrations, ph, modeDurable))
			t.Migrations = t.Migrations || !math.IsNaN(mDur)
			name, phase := wl.rowNames(ph)
			t.Rows = append(t.Rows, []string{name, phase, fmt.Sprintf("%.0f", calls), count0(nat), count0(dur),
				perCall(nat / calls), perCall(dur / calls), perCall(mNat / calls), perCall(mDur / calls)})
			if ph == "" || len(wl.Phases) == 1 {
				if wl.Name == "dpkg" || wl.Name == "build" {
					t.Targets = append(t.Targets, switchTarget{Title: wl.Title, PerCall: dur / calls, Target: targetSwitches,
						Met: dur/calls <= targetSwitches, NativePer: nat / calls})
				}
			}
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// fdCell is the descriptor replies' cell: seconds (count × µs), or "—"
// when the run did not count them.
func fdCell(s, n, extra float64) string {
	if math.IsNaN(s) {
		return "—"
	}
	return fmt.Sprintf("%s (%.0f × %s µs)", secs(s), n, us(extra))
}

// pctOrDash is a share as a whole percentage, or "—" if not measured.
func pctOrDash(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

// secsOrDash is secs, or "—" for a unit not measured.
func secsOrDash(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return secs(v)
}

func count0(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.0f", v)
}

// accounting splits each workload's overhead over native (durable) into
// what the unit costs measured in the same run explain, and the rest.
type accounting struct {
	// The unit costs (ns, s for Fixed): a fork (PerCall/fork), an exec
	// beyond its fork (PerCall/exec), the empty transaction's time over
	// native true (Workload/true) and its commit (s).
	Fork, Exec, Fixed, EmptyCommit float64
	// Gaps are the per-gap overheads of a trapped call in a transaction.
	Gaps []gapPoint
	// Handlers says whether the run measured the handlers' time, in the
	// workloads and in the stat loop; FDExtra is what the bare C
	// supervisor adds to a call whose reply installs a descriptor over
	// one whose reply is a value (ns; NaN when not measured): its open +
	// close less a native one, less its fstatat less a native one.
	Handlers bool
	FDExtra  float64
	Rows     [][]string
	// Effective are the workloads' overheads per trapped call against
	// the floor's at their gap.
	Effective [][]string
	Targets   []effectiveTarget
}

type effectiveTarget struct {
	Title                 string
	PerCall, Floor, Ratio float64
	// Mix is the ratio to the floor of the workload's own mix of calls
	// (NaN when descriptor replies were not counted); Tree the ratio to
	// the floor of a tree of two callers at one listener with that mix
	// (the parallel build's; NaN for the others).
	Mix, Tree float64
	// MixFloor is the floor of the workload's mix over the stat floor:
	// above Target, the target is out of reach of the bare supervisor
	// itself.
	MixFloor float64
	Target   float64
	Met      bool
}

// newAccounting is the accounting table, nil when the run lacks what it
// needs: the workloads' counts, the floor with gaps, fork and exec, and the
// empty transaction.
func newAccounting(r *Results, ws []Workload, fg *floorGaps, tc *twoCallers) *accounting {
	forkTx, forkNat := r.NsPerCall("PerCall/fork/tx"), r.NsPerCall("PerCall/fork/native")
	execTx, execNat := r.NsPerCall("PerCall/exec/tx"), r.NsPerCall("PerCall/exec/native")
	tr := findWorkload(ws, "true")
	if fg == nil || tr == nil || math.IsNaN(forkTx+forkNat+execTx+execNat) {
		return nil
	}
	a := &accounting{Fork: forkTx - forkNat, Gaps: fg.Points,
		Fixed:       medianOf(tr.Secs["true"][modeDurable]) - medianOf(tr.Secs["true"][modeNative]),
		EmptyCommit: medianOf(tr.Commit["true"][modeDurable])}
	a.Exec = execTx - execNat - a.Fork
	if math.IsNaN(a.EmptyCommit) || math.IsNaN(a.Fixed) {
		return nil
	}
	a.FDExtra = (r.firstOf("PerCall/open/floor", "Floor/open-syncwake") - r.NsPerCall("PerCall/open/native")) -
		(r.firstOf("PerCall/stat/floor", "Floor/syncwake") - r.NsPerCall("PerCall/stat/native"))
	// orZero is a unit's seconds in the sum: a unit not measured explains
	// nothing.
	orZero := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	for _, wl := range ws {
		if wl.Name == "true" {
			continue
		}
		calls := medianOf(wl.times(wl.Calls, "", modeDurable))
		execs, forks := medianOf(wl.times(wl.Execs, "", modeDurable)), medianOf(wl.times(wl.Forks, "", modeDurable))
		commit := medianOf(wl.times(wl.Commit, "", modeDurable))
		nat := medianOf(wl.times(wl.Secs, "", modeNative))
		over := medianOf(wl.times(wl.Secs, "", modeDurable)) - nat
		if !(calls > 0) || math.IsNaN(execs+forks+commit+over) {
			continue
		}
		// A program's gap between trapped calls: its native CPU time per call.
		gap := medianOf(wl.times(wl.CPU, "", modeNative)) / calls * 1e9
		unit := fg.at(gap, func(p gapPoint) float64 { return p.Tx })
		floor := fg.at(gap, func(p gapPoint) float64 { return p.Floor })
		phases := float64(len(wl.Phases))
		callS, execS, forkS := calls*unit/1e9, execs*a.Exec/1e9, forks*a.Fork/1e9
		fixedS, writeS := phases*a.Fixed, commit-phases*a.EmptyCommit
		// The handlers' time beyond the stat loop's at the same gap, and
		// what the floor pays more for the descriptor replies.
		handle := medianOf(wl.times(wl.Handle, "", modeDurable))
		handlerS := handle - calls*fg.at(gap, func(p gapPoint) float64 { return p.Handle })/1e9
		fdReplies := medianOf(wl.times(wl.FDReplies, "", modeDurable))
		fdS := fdReplies * a.FDExtra / 1e9
		a.Handlers = a.Handlers || !math.IsNaN(handlerS)
		left := over - callS - execS - forkS - fixedS - writeS - orZero(handlerS) - orZero(fdS)
		a.Rows = append(a.Rows, []string{wl.Title, secs(nat), secs(over),
			fmt.Sprintf("%s (%.0f × %s µs)", secs(callS), calls, us(unit)),
			secsOrDash(handlerS),
			fdCell(fdS, fdReplies, a.FDExtra),
			fmt.Sprintf("%s (%.0f × %s µs)", secs(execS), execs, us(a.Exec)),
			fmt.Sprintf("%s (%.0f × %s µs)", secs(forkS), forks, us(a.Fork)),
			fmt.Sprintf("%s (%.0f × %s s)", secs(fixedS), phases, secs(a.Fixed)),
			secs(writeS), secs(left), fmt.Sprintf("%.0f%%", 100*left/over)})
		eff := over / calls * 1e9
		// The floor of this mix of calls: the floor's overhead at the gap,
		// and its extra for the share of calls answered with a descriptor.
		mix := floor + fdReplies/calls*a.FDExtra
		supCPU := medianOf(wl.times(wl.SupCPU, "", modeDurable)) / calls * 1e9
		// A workload that runs two jobs at once (its "jobs-NAME: 2" line)
		// against the floor of a tree of two callers at one listener
		// (BenchmarkTwoCallers), and its descriptor replies' extra (paid
		// by one caller while the other runs).
		tree := math.NaN()
		if wl.Jobs == 2 {
			tree = tc.treeFloor(gap) + fdReplies/calls*a.FDExtra
		}
		a.Effective = append(a.Effective, []string{wl.Title, us(gap), us(eff), us(floor), ratioX(overRatio(eff, floor)),
			pctOrDash(fdReplies / calls), us(mix), ratioX(overRatio(eff, mix)), us(tree), ratioX(overRatio(eff, tree)), us(supCPU)})
		if wl.Name == "dpkg" || wl.Name == "build" {
			r := overRatio(eff, floor)
			a.Targets = append(a.Targets, effectiveTarget{Title: wl.Title, PerCall: eff, Floor: floor, Ratio: r,
				Mix: overRatio(eff, mix), Tree: overRatio(eff, tree), MixFloor: overRatio(mix, floor),
				Target: targetEffective, Met: r <= targetEffective})
		}
	}
	if len(a.Rows) == 0 {
		return nil
	}
	return a
}
