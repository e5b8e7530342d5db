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
}

// NewFastRings makes the rings' registry of the tree of view v.
func NewFastRings(v *vfs.Tx, tree *fastlookup.Tree) *FastRings {
	return &FastRings{View: v, Tree: tree, byProc: map[int]*fastlookup.Ring{}, users: map[*fastlookup.Ring]int{}}
}

// Ring makes a new ring for process tgid, replacing the one it had, and
// returns its memfd (interpose.SharedMemory.Ring).
func (f *FastRings) Ring(tgid int) (int, error) {
	g, err := fastlookup.NewRing()
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
// killed in the agent) are released and it is closed.
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
		f.View.FeedFastLookups(g)
		return
	}
	delete(f.users, g)
	f.View.FeedFastLookupsReleasing(g)
	g.Close()
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
func (f *FastRings) Background() {
	f.stop, f.done = make(chan struct{}), make(chan struct{})
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
			wait, idle = nextLook(wait, idle, f.Drain())
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
	defer f.mu.Unlock()
	for tgid := range f.byProc {
		f.dropLocked(tgid)
	}
}
