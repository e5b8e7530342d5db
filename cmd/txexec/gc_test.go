package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoalPercent(t *testing.T) {
	const floor = 8 << 20
	for _, tc := range []struct {
		name       string
		live, scan uint64
		want       int
	}{
		{"empty heap: the runtime's minimum is the floor", 0, 0, 200},
		{"1 MiB", 1 << 20, 1 << 20, 200},
		{"3 MiB: live + scan × GOGC/100 is the floor", 3 << 20, 3 << 20, 166},
		{"2 MiB, 2 MiB of stacks and globals", 2 << 20, 4 << 20, 150},
		{"6 MiB: GOGC=50 puts it above the floor", 6 << 20, 6 << 20, 50},
		{"64 MiB", 64 << 20, 65 << 20, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := goalPercent(tc.live, tc.scan, floor, 50)
			assert.Equal(t, tc.want, p)
			scan := max(tc.scan, tc.live, 1)
			goal := max(tc.live+scan*uint64(p)/100, runtimeHeapMinimum*uint64(p)/100)
			assert.GreaterOrEqual(t, goal, uint64(floor)-scan/100, "never below the floor (but for rounding)")
			assert.LessOrEqual(t, goal, max(uint64(floor), tc.live+scan/2), "never above the floor or GOGC=50's goal")
		})
	}
}

// TestKeepHeapGoalAbove: after collections, the runtime's GC percentage is
// the one goalPercent gives for the live heap.
func TestKeepHeapGoalAbove(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	const floor = 64 << 20 // far above this test binary's live heap
	keepHeapGoalAbove(floor, 50)
	samples := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	// The finalizer runs after the collection that frees its object:
	// collect until it has (each runtime.GC waits for the one before's
	// sweep, and Gosched lets the finalizer goroutine run).
	for i := 0; ; i++ {
		runtime.GC()
		runtime.Gosched()
		metrics.Read(samples)
		if samples[0].Value.Uint64() != 50 {
			break
		}
		require.Less(t, i, 1000, "the percentage was never set")
	}
	assert.Greater(t, samples[0].Value.Uint64(), uint64(50))
	assert.InDelta(t, float64(floor), float64(samples[1].Value.Uint64()), float64(floor)/10,
		"the runtime's goal at the floor (the live heap moves between collections)")
}
