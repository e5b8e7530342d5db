package fastlookup

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Calls are the system calls the agent may record: the lookups of
// docs/fastpath.md §4.1.
var Calls = map[int]string{
	unix.SYS_NEWFSTATAT: "newfstatat",
	unix.SYS_STATX:      "statx",
	unix.SYS_READLINK:   "readlink",
	unix.SYS_READLINKAT: "readlinkat",
	unix.SYS_ACCESS:     "access",
	unix.SYS_FACCESSAT:  "faccessat",
	unix.SYS_FACCESSAT2: "faccessat2",
	unix.SYS_OPENAT:     "openat",
}

// IsReadlink reports whether nr is readlink or readlinkat.
func IsReadlink(nr int) bool { return nr == unix.SYS_READLINK || nr == unix.SYS_READLINKAT }

// Record is one call the agent made natively, as read from a ring and
// checked (see decode).
type Record struct {
	// Position is the record's place in its ring (0, 1, …).
	Position uint64
	// Generation is the tree's generation the agent read before the call.
	Generation uint64
	Nr         int
	// Path is absolute and clean: no empty, "." or ".." component; or,
	// for a Relative record, one such component, a name in the fast
	// directory whose identity is DirDev, DirIno (Tree.DirPath).
	Path           string
	Relative       bool
	DirDev, DirIno uint64
	// Descriptor: a lookup of a descriptor itself (AT_EMPTY_PATH) that
	// observed the object Dev, Ino; Path is what /proc/self/fd showed for
	// the descriptor then.
	Descriptor bool
	Result     int64
	// Observed: the call found the object, whose identity and attributes
	// follow.
	Observed bool
	Dev, Ino uint64
	// Mode has the type bits (S_IFMT).
	Mode, UID, GID uint32
	Size           int64
	Mtime, Ctime   unix.Timespec
}

// MalformedError is a ring slot that is no record the agent writes: the
// program wrote into its ring itself.
type MalformedError struct {
	Position uint64
	Why      string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed fast-lookup record %d: %s", e.Position, e.Why)
}

// Ring is one process's ring of records (struct fl_ring): the agent
// reserves and publishes slots; the supervisor drains them. Drain and
// ReleaseHoles are for one goroutine at a time.
type Ring struct {
	mem *shared
	r   *ringLayout
	// tail is the supervisor's own tail (the shared one is for the
	// agent's room check only); done are positions at or after it already
	// consumed, behind a hole.
	tail uint64
	done map[uint64]bool
}

// recordsFed counts the records every ring of this process has passed to
// a feed (RecordsFed).
var recordsFed atomic.Uint64

// RecordsFed is the number of records the rings of this process have fed
// so far, all transactions together: for a benchmark's statistics
// (TXEXEC_STATS).
func RecordsFed() uint64 { return recordsFed.Load() }

// NewRing makes a process's ring, empty.
func NewRing() (*Ring, error) {
	mem, err := newShared("txexec-fastlookup-ring", int(unsafe.Sizeof(ringLayout{})), false)
	if err != nil {
		return nil, err
	}
	return &Ring{mem: mem, r: (*ringLayout)(mem.ptr()), done: map[uint64]bool{}}, nil
}

// FD is the ring's memfd (read-write), for the process to map; the ring
// keeps it.
func (g *Ring) FD() int { return g.mem.fd }

// Close unmaps the supervisor's mapping and closes its descriptor.
func (g *Ring) Close() { g.mem.close() }

// Drain reads every published record of the ring that it has not read yet,
// in order of position, and passes each to feed; a slot that is published
// but malformed is consumed without feeding it. The tail then advances over
// the consumed prefix: an unpublished slot (a call still in the agent, or a
// thread that died in it) stays a hole until published or ReleaseHoles.
// It returns the number of records fed and the first error: a
// *MalformedError or feed's.
func (g *Ring) Drain(feed func(*Record) error) (int, error) {
	var first error
	n := 0
	head := atomic.LoadUint64(&g.r.head)
	if head-g.tail > RingN { // not more than a lap, whatever the program wrote
		head = g.tail + RingN
	}
	start, hole := g.tail, false
	for pos := start; pos != head && pos-start < RingN; pos++ {
		if len(g.done) > 0 && g.done[pos] {
			if !hole { // consumed behind a hole that is gone now
				delete(g.done, pos)
				g.tail = pos + 1
			}
			continue
		}
		slot := &g.r.slots[pos%RingN]
		if atomic.LoadUint64(&slot.seq) != pos+1 { // acquire: the record after it
			hole = true
			continue
		}
		local := *slot // read once: the program may write the slot meanwhile
		if hole {
			g.done[pos] = true
		} else {
			g.tail = pos + 1
		}
		if local.nr == NrNone {
			continue
		}
		rec, err := decode(pos, &local)
		if err == nil {
			n++
			recordsFed.Add(1)
			err = feed(&rec)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	g.advance()
	return n, first
}

// ReleaseHoles drains the ring, then drops every slot reserved and not
// published, so that the ring has room again. Only when no thread of the
// process can be between reserving a slot and publishing it: each has
// exited, or is stopped outside the agent (a thread in a notified call is:
// the agent publishes its slot before it forwards). A thread killed inside
// the agent leaves such a hole.
func (g *Ring) ReleaseHoles(feed func(*Record) error) (int, error) {
	n, err := g.Drain(feed)
	head := atomic.LoadUint64(&g.r.head)
	for p := g.tail; p != head && p-g.tail < RingN; p++ {
		g.done[p] = true
	}
	g.advance()
	return n, err
}

// advance moves the tail over the consumed prefix and tells the agent.
func (g *Ring) advance() {
	for g.done[g.tail] {
		delete(g.done, g.tail)
		g.tail++
	}
	atomic.StoreUint64(&g.r.tail, g.tail) // release: the slots are free
}

// Pending reports whether the agent has reserved a slot that Drain has not
// consumed: a cheap test before taking the locks a feed needs.
func (g *Ring) Pending() bool { return atomic.LoadUint64(&g.r.head) != g.tail }

// Tail is the position of the first record not consumed.
func (g *Ring) Tail() uint64 { return g.tail }

// decode checks one slot's copy and returns its record.
func decode(pos uint64, s *recordLayout) (Record, error) {
	bad := func(format string, a ...any) (Record, error) {
		return Record{}, &MalformedError{Position: pos, Why: fmt.Sprintf(format, a...)}
	}
	nr := int(s.nr)
	if _, ok := Calls[nr]; !ok {
		return bad("system call %d is no fast lookup", nr)
	}
	if s.pathLen == 0 || s.pathLen >= PathMax || s.path[s.pathLen] != 0 {
		return bad("path length %d", s.pathLen)
	}
	raw := s.path[:s.pathLen]
	if bytes.IndexByte(raw, 0) >= 0 {
		return bad("NUL inside the path")
	}
	path := string(raw)
	relative, descriptor := s.flags&flRelative != 0, s.flags&flDescriptor != 0
	switch {
	case relative && descriptor:
		return bad("flags %#x", s.flags)
	case relative && !cleanName(path):
		return bad("name %q is not one component", path)
	case !relative && !cleanAbsolute(path):
		return bad("path %q is not absolute and clean", path)
	}
	observed := s.flags&flObserved != 0
	if s.flags&^(flObserved|flRelative|flDescriptor) != 0 {
		return bad("flags %#x", s.flags)
	}
	if descriptor && (!observed || s.result != 0 || (nr != unix.SYS_NEWFSTATAT && nr != unix.SYS_STATX)) {
		return bad("descriptor record of %s returning %d", Calls[nr], s.result)
	}
	res := s.result
	switch {
	case res < -4095:
		return bad("result %d", res)
	case res > 0 && nr != unix.SYS_OPENAT && !IsReadlink(nr), res > 1<<31-1:
		return bad("result %d of %s", res, Calls[nr])
	case res >= 0 && IsReadlink(nr) && (!observed || s.mode&unix.S_IFMT != unix.S_IFLNK || res > s.size):
		// A symlink's target read natively: its length, at most the
		// symlink's size.
		return bad("result %d of %s of mode %#o and size %d", res, Calls[nr], s.mode, s.size)
	}
	found := res >= 0 || IsReadlink(nr) && res == -int64(unix.EINVAL)
	if observed != found {
		return bad("identity %v for result %d", observed, res)
	}
	rec := Record{Position: pos, Generation: s.generation, Nr: nr, Path: path, Result: res, Observed: observed}
	if relative {
		rec.Relative, rec.DirDev, rec.DirIno = true, s.dirDev, s.dirIno
	}
	rec.Descriptor = descriptor
	if observed {
		if !validType(s.mode) || s.mtimeNsec < 0 || s.mtimeNsec >= 1e9 || s.ctimeNsec < 0 || s.ctimeNsec >= 1e9 || s.size < 0 {
			return bad("attributes (mode %#o)", s.mode)
		}
		rec.Dev, rec.Ino, rec.Mode, rec.UID, rec.GID, rec.Size = s.dev, s.ino, s.mode, s.uid, s.gid, s.size
		rec.Mtime = unix.Timespec{Sec: s.mtimeSec, Nsec: s.mtimeNsec}
		rec.Ctime = unix.Timespec{Sec: s.ctimeSec, Nsec: s.ctimeNsec}
	}
	return rec, nil
}

func validType(mode uint32) bool {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK, unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
		return true
	}
	return false
}

// cleanAbsolute reports whether p is "/" or "/" followed by components
// none of which is empty, "." or "..".
func cleanAbsolute(p string) bool {
	if p == "/" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	// Component by component without splitting (no allocation: every
	// record drained goes through here).
	for rest := p[1:]; ; {
		c, after, more := strings.Cut(rest, "/")
		if c == "" || c == "." || c == ".." {
			return false
		}
		if !more {
			return true
		}
		rest = after
	}
}
