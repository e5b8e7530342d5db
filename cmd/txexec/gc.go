package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// gcPercent is txexec's GOGC unless the environment sets one.
const gcPercent = 50

// heapGoalFloor is the smallest heap goal txexec lets the collector aim at
// (unless the environment sets GOGC). At GOGC=50 the runtime's own floor
// is 2 MiB: a supervisor whose live heap stays under 1 MiB (the parallel C
// build with --fast-lookups) collected every 150 ms, 14 times for a 2 s
// build, some 13 ms of CPU by gctrace's count; twice (2 ms) with this
// floor, for 5.5 MiB more peak RSS. It is bounded: the goal is
// heapGoalFloor or what GOGC=50 makes it, whichever is larger, so a long
// run's heap grows with what it keeps, as before, and a heap above about
// 5.3 MiB (dpkg's, tens of MiB) is paced exactly as before.
const heapGoalFloor = 8 << 20

// setGC sets the collector's pace: gcPercent, and the heap goal kept at
// heapGoalFloor or more (keepHeapGoalAbove).
func setGC() {
	debug.SetGCPercent(gcPercent)
	keepHeapGoalAbove(heapGoalFloor, gcPercent)
}

// runtimeHeapMinimum is the Go runtime's smallest heap goal at GOGC=100
// (defaultHeapMinimum); at other settings it scales with GOGC.
const runtimeHeapMinimum = 4 << 20

// goalPercent is the GC percentage that puts the heap goal at floor, if
// percent would put it lower. The runtime's goal is the larger of live +
// scan × GOGC/100 (live being the heap marked live by the last collection,
// scan that plus the goroutine stacks and the globals) and
// runtimeHeapMinimum × GOGC/100: the smallest percentage at which either
// reaches floor.
func goalPercent(live, scan, floor uint64, percent int) int {
	scan = max(scan, live, 1)
	if live+scan*uint64(percent)/100 >= floor || live >= floor {
		return percent
	}
	return int(min((floor-live)*100/scan, floor*100/runtimeHeapMinimum))
}

// gcCycle is the object whose finalizer runs once after each collection.
// It holds a pointer so that it is not a tiny allocation (whose
// finalizer may never run).
type gcCycle struct{ _ *int }

// keepHeapGoalAbove sets, after every collection, the GC percentage that
// keeps the next heap goal at floor or more (goalPercent): the runtime
// has no setting for a floor, only GOGC, whose floor is 4 MiB × GOGC/100.
func keepHeapGoalAbove(floor uint64, percent int) {
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
	}
	current := percent
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&gcCycle{}, func(*gcCycle) {
			metrics.Read(samples)
			var v [3]uint64
			for i, s := range samples {
				if s.Value.Kind() != metrics.KindUint64 {
					arm() // unknown to this runtime: the percentage stays
					return
				}
				v[i] = s.Value.Uint64()
			}
			if p := goalPercent(v[0], v[0]+v[1]+v[2], floor, percent); p != current {
				debug.SetGCPercent(p)
				current = p
			}
			arm()
		})
	}
	arm()
}
