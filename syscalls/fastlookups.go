package syscalls

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"txexec/fastlookup"
	"txexec/vfs"
)

// FastRings is the transaction's side of the fast path for read-only
// lookups (docs/fastpath.md §4.4, §4.7): the ring of each process of the
// tree, made when interpose maps one into a new image or a forked child,
// and drained into the view's read set before the supervisor serves any
// notified call of the tree, when a process exits (its holes released),
// and when the tree has ended, before validation — and in between by a
// goroutine of its own (Background), so that most records are fed while
// the program runs, not while it waits for a call to be served.
type FastRings struct {
	View *vfs.Tx
	Tree *fastlookup.Tree

	// stop ends Background's goroutine; done is closed when it has.
	stop, done chan struct{}

	mu sync.Mutex
	// byProc is the ring each process maps (a vfork child its parent's
	// until it execs); users counts the processes of each ring.
	// +checklocks:mu
	byProc map[int]*fastlookup.Ring
	// +checklocks:mu
	users map[*fastlookup.Ring]int

	// keptMu guards the rings Background's goroutine makes ahead and
	// closes. Lock order: mu, then keptMu.
	keptMu sync.Mutex
	// spare are rings made ahead, never given to any process: Ring hands
	// them out, each once.
	// +checklocks:keptMu
	spare []*fastlookup.Ring
	// retired are rings no process maps any more, drained and their
	// holes released, to be closed.
	// +checklocks:keptMu
	retired []*fastlookup.Ring
	// keeping says Background's goroutine runs: without it, a dropped
	// ring is closed at once, on the caller's goroutine.
	// +checklocks:keptMu
	keeping bool
	// taken says Ring took a ring since the goroutine last made spares:
	// a tree that starts no process after its command pays for none.
	// +checklocks:keptMu
	taken bool
}

// spareRingN is how many rings Background's goroutine keeps made ahead:
// one process takes one at its exec, a forked child one at its first
// stop. When none is left, Ring makes its own.
const spareRingN = 4

// NewFastRings makes the rings' registry of the tree of view v.
func NewFastRings(v *vfs.Tx, tree *fastlookup.Tree) *FastRings {
	return &FastRings{View: v, Tree: tree, byProc: map[int]*fastlookup.Ring{}, users: map[*fastlookup.Ring]int{}}
}

// Ring makes a new ring for process tgid, replacing the one it had, and
// returns its memfd (interpose.SharedMemory.Ring). With Background
// running, the ring is usually one made ahead (a spare, which no process
// has mapped), so that making it costs the tracer's thread nothing.
func (f *FastRings) Ring(tgid int) (int, error) {
	g, err := f.fresh()
	if err != nil {
		return -1, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropLocked(tgid)
	f.byProc[tgid] = g
	f.users[g]++
	return g.FD(), nil
}

// fresh returns a ring no process has mapped: a spare, or a new one.
func (f *FastRings) fresh() (*fastlookup.Ring, error) {
	f.keptMu.Lock()
	f.taken = true
	n := len(f.spare)
	var g *fastlookup.Ring
	if n > 0 {
		g = f.spare[n-1]
		f.spare[n-1] = nil
		f.spare = f.spare[:n-1]
	}
	f.keptMu.Unlock()
	if g != nil {
		return g, nil
	}
	return fastlookup.NewRing()
}

// retire closes ring g, which no process maps any more and which has been
// drained: on Background's goroutine when it runs (the unmapping and the
// close cost about as much as making the ring), else now.
func (f *FastRings) retire(g *fastlookup.Ring) {
	f.keptMu.Lock()
	if !f.keeping {
		f.keptMu.Unlock()
		g.Close()
		return
	}
	f.retired = append(f.retired, g)
	f.keptMu.Unlock()
}

// keep closes the retired rings and makes spares up to spareRingN; it
// reports whether it had anything to do.
func (f *FastRings) keep() bool {
	closed := f.closeRetired()
	made := f.makeSpares()
	return closed || made
}

// closeRetired closes every retired ring, and reports whether there was
// any.
func (f *FastRings) closeRetired() bool {
	f.keptMu.Lock()
	retired := f.retired
	f.retired = nil
	f.keptMu.Unlock()
	for _, g := range retired {
		g.Close()
	}
	return len(retired) > 0
}

// makeSpares makes rings until spareRingN are spare (or one cannot be
// made: Ring then makes its own, and reports the error), if Ring took one
// since the last time, and reports whether it made any.
func (f *FastRings) makeSpares() bool {
	f.keptMu.Lock()
	taken := f.taken
	f.taken = false
	f.keptMu.Unlock()
	if !taken {
		return false
	}
	made := false
	for {
		f.keptMu.Lock()
		n := len(f.spare)
		f.keptMu.Unlock()
		if n >= spareRingN {
			return made
		}
		g, err := fastlookup.NewRing()
		if err != nil {
			return made
		}
		made = true
		// The first look at an empty ring maps its first page: done
		// here, not in the drain that first finds the ring.
		g.Pending()
		f.keptMu.Lock()
		f.spare = append(f.spare, g)
		f.keptMu.Unlock()
	}
}

// Failed forgets the ring of tgid, which it could not map
// (interpose.SharedMemory.Failed).
func (f *FastRings) Failed(tgid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropLocked(tgid)
}

// Clone records that child maps its parent's ring: a thread or a vfork
// child shares it for good, a forked child until it gets its own (before
// it runs).
func (f *FastRings) Clone(parentTgid, child int, flags uint64) {
	if flags&unix.CLONE_THREAD != 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if g := f.byProc[parentTgid]; g != nil {
		f.byProc[child] = g
		f.users[g]++
	}
}

// Exited drains the ring of process tid when it exits, and frees it once
// no process maps it.
func (f *FastRings) Exited(tid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropLocked(tid)
}

// dropLocked ends process tgid's use of its ring: the ring is drained,
// and when no other process maps it, its holes (slots reserved by a thread
// killed in the agent) are released and it is closed. A ring with no slot
// reserved past what was drained (most, at an exit: the background drain
// fed them) has nothing to feed and no hole: the view's lock, which a
// handler may hold, is not waited for.
//
// Preconditions: f.mu held.
func (f *FastRings) dropLocked(tgid int) {
	g := f.byProc[tgid]
	if g == nil {
		return
	}
	delete(f.byProc, tgid)
	f.users[g]--
	if f.users[g] > 0 {
		if g.Pending() {
			f.View.FeedFastLookups(g)
		}
		return
	}
	delete(f.users, g)
	if g.Pending() {
		f.View.FeedFastLookupsReleasing(g)
	}
	f.retire(g)
}

// Drain feeds every ring's published records into the read set: before a
// notified call of the tree is served, so that a record is in the read
// set before anything the program did after it reaches the supervisor.
// A ring the agent found full reaches here with the call it forwarded.
// It reports whether any ring held records.
func (f *FastRings) Drain() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fed := false
	for g := range f.users {
		if g.Pending() {
			f.View.FeedFastLookups(g)
			fed = true
		}
	}
	return fed
}

// Background drains the rings in a goroutine of its own until Finish: a
// record then reaches the read set while the program goes on natively
// (on the other CPU), rather than in the drain before the next call the
// supervisor serves, which the program waits for. That drain stays: it
// feeds what is left, in order, as before. The goroutine looks every
// backgroundBusy while it finds records, backing off to backgroundIdle
// when it finds none, and to backgroundAsleep once it has found none for
// backgroundNap (nextLook). A record fed after a change the transaction made
// since the call is a read of the host before the change: its generation
// says so (docs/fastpath.md §4.7), however late the feed.
//
// At each look it also closes the rings dropped since the last and makes
// rings ahead (keep), so that the tracer's thread, which a process waits
// for at each of its stops, neither makes nor closes one (each costs it
// about 20 µs, docs/fastpath.md §15). It does so at the looks it makes
// anyway, never woken for it: a goroutine woken by the tracer's thread
// was seen to take the CPU from it at once.
func (f *FastRings) Background() {
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	f.keptMu.Lock()
	f.keeping = true
	f.keptMu.Unlock()
	go func() {
		defer close(f.done)
		wait, idle := backgroundBusy, time.Duration(0)
		t := time.NewTimer(wait)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
			}
			kept := f.keep()
			wait, idle = nextLook(wait, idle, f.Drain() || kept)
			t.Reset(wait)
		}
	}()
}

// How often Background looks at the rings: while they hold records (a
// ring of 1,024 fills in a few milliseconds of a program that makes
// nothing but lookups, and a full ring forwards its calls), at most when
// they hold none, and once they have held none for backgroundNap: a tree
// that waits (an interactive shell, a sleep) is not woken 125 times a
// second, each look waking two or three of the supervisor's threads. A
// burst after such a nap fills a ring at worst before the next look, and
// its full ring forwards one call a ring, which drains it.
const (
	backgroundBusy   = 500 * time.Microsecond
	backgroundIdle   = 8 * time.Millisecond
	backgroundNap    = time.Second
	backgroundAsleep = 250 * time.Millisecond
)

// nextLook is the wait before Background's next look, after a look that
// found records or not, and how long the rings have held none (idle).
func nextLook(wait, idle time.Duration, found bool) (time.Duration, time.Duration) {
	switch {
	case found:
		return backgroundBusy, 0
	case idle+wait >= backgroundNap:
		return backgroundAsleep, idle + wait
	}
	return min(2*wait, backgroundIdle), idle + wait
}

// Finish turns the fast path off for the whole tree and drains every ring
// left: the commit's validation must see every record, and its
// write-through changes the host the agent reads.
func (f *FastRings) Finish() {
	if f.stop != nil {
		close(f.stop)
		<-f.done
		f.stop = nil
	}
	f.Tree.Enable(false)
	f.mu.Lock()
	for tgid := range f.byProc {
		f.dropLocked(tgid)
	}
	f.mu.Unlock()
	// Nothing maps a ring any more: the retired ones and the spares are
	// closed now, and a ring dropped later is closed at once.
	f.keptMu.Lock()
	f.keeping = false
	spare := f.spare
	f.spare = nil
	f.keptMu.Unlock()
	f.closeRetired()
	for _, g := range spare {
		g.Close()
	}
}
