package determ

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// Epoch is the virtual wall-clock time at which every deterministic run
// starts: 2000-01-01T00:00:00Z.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Step is how far the virtual clock moves at each read.
const Step = time.Millisecond

// Hostname is the node name uname reports.
const Hostname = "txexec"

// CPUs is the number of processors a deterministic run sees.
const CPUs = 4

// Env is one deterministic run's clock and random streams.
type Env struct {
	seed uint64

	mu sync.Mutex
	// elapsed is the virtual time since Epoch.
	// +checklocks:mu
	elapsed time.Duration
	// tasks are the live tasks by tid.
	// +checklocks:mu
	tasks map[int]*task
}

// task is one supervised thread: its place in the tree and its stream.
type task struct {
	place    string
	children int
	stream   *rand.ChaCha8
}

// New makes the environment of a run with seed.
func New(seed uint64) *Env {
	return &Env{seed: seed, tasks: map[int]*task{}}
}

// Seed returns the run's seed.
func (e *Env) Seed() uint64 { return e.seed }

// ParseSeed reads a SEED of --deterministic=SEED: a decimal number.
func ParseSeed(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("seed %q: expected a decimal number below 2^64", s)
	}
	return n, nil
}

// newTaskLocked registers thread tid at place, with its stream.
//
// Preconditions: e.mu held.
//
// +checklocks:e.mu
func (e *Env) newTaskLocked(tid int, place string) *task {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], e.seed)
	h.Write(b[:])
	h.Write([]byte(place))
	var key [32]byte
	copy(key[:], h.Sum(nil))
	t := &task{place: place, stream: rand.NewChaCha8(key)}
	e.tasks[tid] = t
	return t
}

// Root registers the command's first thread.
func (e *Env) Root(tid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.newTaskLocked(tid, "0")
}

// Clone registers child, created by parent: its place is the parent's
// followed by the parent's count of children so far.
func (e *Env) Clone(parent, child int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.tasks[parent]
	if p == nil {
		return
	}
	e.newTaskLocked(child, p.place+"."+strconv.Itoa(p.children))
	p.children++
}

// Execed moves formerTid's place and stream to tgid, the id the thread
// has after an exec by a thread other than the group's leader.
func (e *Env) Execed(tgid, formerTid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if tgid == formerTid {
		return
	}
	if t := e.tasks[formerTid]; t != nil {
		e.tasks[tgid] = t
		delete(e.tasks, formerTid)
	}
}

// Exited forgets tid.
func (e *Env) Exited(tid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.tasks, tid)
}

// Place returns tid's place in the tree ("" for an unknown thread).
func (e *Env) Place(tid int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.tasks[tid]; t != nil {
		return t.place
	}
	return ""
}

// Random fills buf from tid's stream. An unknown thread (none should call)
// gets a stream of its own place "?", still derived from the seed.
func (e *Env) Random(tid int, buf []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.tasks[tid]
	if t == nil {
		t = e.newTaskLocked(tid, "?")
	}
	t.stream.Read(buf)
}

// Now reads the virtual clock, which then moves by Step: the time since
// Epoch.
func (e *Env) Now() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.elapsed
	e.elapsed += Step
	return now
}

// Sleep moves the clock by d (a relative sleep, which takes no real time)
// and reports the time since Epoch after it.
func (e *Env) Sleep(d time.Duration) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d > 0 {
		e.elapsed += d
	}
	return e.elapsed
}

// SleepUntil moves the clock to at least t since Epoch (an absolute
// sleep).
func (e *Env) SleepUntil(t time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t > e.elapsed {
		e.elapsed = t
	}
}

// Wall returns the wall-clock time at virtual time since Epoch d.
func Wall(d time.Duration) time.Time { return Epoch.Add(d) }
