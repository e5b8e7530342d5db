package main

import (
	"math"
	"slices"
	"strings"
)

// twoCallers is BenchmarkTwoCallers: the stat loop made by one process and
// by two at once, natively, under the bare C supervisor and in one
// transaction without the fast path.
type twoCallers struct {
	Rows [][]string
	// Tx is the largest two-loops-over-one ratio in the transaction, at
	// TxGap µs; Floor the bare supervisor's at the same gap.
	Tx, Floor float64
	TxGap     string
}

// newTwoCallers is BenchmarkTwoCallers's table, nil if it did not run.
func newTwoCallers(r *Results) *twoCallers {
	var gaps []string
	for _, n := range r.Order {
		if rest, ok := strings.CutPrefix(n, "TwoCallers/"); ok {
			if g, _, ok := strings.Cut(rest, "/"); ok && !slices.Contains(gaps, g) {
				gaps = append(gaps, g)
			}
		}
	}
	if len(gaps) == 0 {
		return nil
	}
	tc := &twoCallers{Tx: math.NaN(), Floor: math.NaN()}
	for _, g := range gaps {
		ns := func(mode string) float64 { return r.MedianOrNaN("TwoCallers/"+g+"/"+mode, "ns/call") }
		row := []string{strings.TrimSuffix(g, "us")}
		for _, m := range []string{"native", "floor", "tx"} {
			row = append(row, us(ns(m+"-1")), us(ns(m+"-2")))
		}
		for _, m := range []string{"native", "floor", "tx"} {
			row = append(row, ratio(ns(m+"-2"), ns(m+"-1")))
		}
		tc.Rows = append(tc.Rows, row)
		if v := ns("tx-2") / ns("tx-1"); !math.IsNaN(v) && (math.IsNaN(tc.Tx) || v > tc.Tx) {
			tc.Tx, tc.Floor, tc.TxGap = v, ns("floor-2")/ns("floor-1"), row[0]
		}
	}
	return tc
}
