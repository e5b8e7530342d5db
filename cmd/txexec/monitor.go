package main

import (
	"errors"
	"time"

	"txexec/internal/sysx"
)

// batchRuntimeMonitor puts the Go runtime's monitor thread in the
// SCHED_BATCH class (sysx.BatchRuntimeMonitor): in a transaction its
// wake-ups preempted the traced programs. Measured on the parallel C
// build, durable with the fast path, paired runs: 0.97 of the time and
// 0.95 of the CPU; dpkg -i + -r, with and without the fast path, no
// difference (docs/performance.md, optimization 24). It tries for a while:
// the thread is recognised only while it waits, which is nearly always. A
// failure costs only speed, and is not reported.
func batchRuntimeMonitor() {
	for range 50 {
		_, err := sysx.BatchRuntimeMonitor()
		if !errors.Is(err, sysx.ErrNoMonitor) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
