package main

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// twoCallers is BenchmarkTwoCallers: the stat loop made by one process and
// by two at once, natively, under the bare C supervisor (a listener for
// each loop, or one for both) and in one transaction without the fast
// path.
type twoCallers struct {
	Rows [][]string
	// Points are the gaps, each with the floor of a tree of two callers.
	Points []twoPoint
	// Tx is the largest two-loops-over-one ratio in the transaction, at
	// TxGap µs; Shared the bare supervisor's with one listener for both
	// loops, and Apart its with a listener for each, at the same gap.
	Tx, Shared, Apart float64
	TxGap             string
}

// twoPoint is one gap of BenchmarkTwoCallers (Nominal, ns) and the bare
// supervisor's overhead with one listener for two loops, per call of
// either (TreeFloor, ns): the wall time it adds to a tree whose two
// processes make calls at once all the time, over its calls.
type twoPoint struct {
	Nominal, TreeFloor float64
}

// newTwoCallers is BenchmarkTwoCallers's table, nil if it did not run.
func newTwoCallers(r *Results) *twoCallers {
	gaps := r.subNames("TwoCallers/")
	if len(gaps) == 0 {
		return nil
	}
	tc := &twoCallers{Tx: math.NaN(), Shared: math.NaN(), Apart: math.NaN()}
	for _, g := range gaps {
		ns := func(mode string) float64 { return r.MedianOrNaN("TwoCallers/"+g+"/"+mode, "ns/call") }
		nominal, err := strconv.Atoi(strings.TrimSuffix(g, "us"))
		if err != nil {
			continue
		}
		row := []string{strconv.Itoa(nominal)}
		for _, m := range []string{"native-1", "native-2", "floor-1", "floor-2", "floor-shared-2", "tx-1", "tx-2"} {
			row = append(row, us(ns(m)))
		}
		// The shared listener's overhead over two native loops.
		sharedOver := ns("floor-shared-2") - ns("native-2")
		row = append(row, ratio(ns("native-2"), ns("native-1")), ratio(ns("floor-2"), ns("floor-1")),
			ratio(ns("floor-shared-2"), ns("floor-1")), ratio(ns("tx-2"), ns("tx-1")),
			ratioX(overRatio(ns("tx-2")-ns("native-2"), sharedOver)))
		tc.Rows = append(tc.Rows, row)
		if !math.IsNaN(sharedOver) {
			tc.Points = append(tc.Points, twoPoint{Nominal: float64(nominal) * 1000, TreeFloor: sharedOver / 2})
		}
		if v := ns("tx-2") / ns("tx-1"); !math.IsNaN(v) && (math.IsNaN(tc.Tx) || v > tc.Tx) {
			tc.Tx, tc.TxGap = v, row[0]
			tc.Shared, tc.Apart = ns("floor-shared-2")/ns("floor-1"), ns("floor-2")/ns("floor-1")
		}
	}
	slices.SortFunc(tc.Points, func(a, b twoPoint) int { return cmp.Compare(a.Nominal, b.Nominal) })
	return tc
}

// treeFloor is the floor of a tree of two callers at one listener, per
// call, at a gap of gapNs, NaN without the benchmark.
func (tc *twoCallers) treeFloor(gapNs float64) float64 {
	if tc == nil {
		return math.NaN()
	}
	return interpolateAt(tc.Points, gapNs, func(p twoPoint) float64 { return p.Nominal }, func(p twoPoint) float64 { return p.TreeFloor })
}
