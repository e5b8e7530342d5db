package interpose

import (
	"runtime"
	"time"
)

// schedPassEvery is how often a loop of system calls on a locked thread
// passes through the Go scheduler: half the runtime's forcePreemptNS
// (10 ms), the time after which sysmon treats a P whose goroutine has not
// been scheduled as one to take.
const schedPassEvery = 5 * time.Millisecond

// schedPass keeps a locked thread's P looking alive to the Go runtime's
// monitor thread (sysmon). A notification worker and the tracer each loop
// system calls on their own thread (NOTIF_RECV or wait4, then the reply or
// the ptrace requests) and never pass through the scheduler, so the P they
// hold keeps the schedule tick it had when the loop began. Once that tick
// is 10 ms old, sysmon takes the P at every look that finds the thread in
// a system call — every wait for the next call — and each time it does it
// goes back to looking every 20 µs, for as long as the loop runs: some
// 8,000 wake-ups a second of its own, on the CPU the traced program
// computes on, and the P's return on the thread's next exit from the
// wait. A pass through the scheduler every schedPassEvery gives the P a
// new tick, so that sysmon leaves it alone (docs/performance.md,
// optimization 24). For a goroutine locked to its thread a pass is a hand-off
// of the P to another thread and back (two wake-ups), some 200 a second
// at most while calls stream in, and none while the loop waits.
type schedPass struct {
	last  time.Duration
	now   func() time.Duration // monotonic; sinceStart unless a test sets it
	yield func()               // runtime.Gosched unless a test sets it
}

// start is the origin of sinceStart's monotonic readings.
var start = time.Now()

func sinceStart() time.Duration { return time.Since(start) }

// step passes through the scheduler if schedPassEvery has gone by since the
// last pass. Called once per iteration of the loop, before its wait.
func (p *schedPass) step() {
	now := sinceStart
	if p.now != nil {
		now = p.now
	}
	t := now()
	if t-p.last < schedPassEvery {
		return
	}
	p.last = t
	if p.yield != nil {
		p.yield()
		return
	}
	runtime.Gosched()
}
