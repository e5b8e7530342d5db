package hostlock

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Key identifies a host original by device and inode.
type Key struct{ Dev, Ino uint64 }

// EOF is the end of a range that runs to the end of the file, however far
// it grows (l_len 0).
const EOF = math.MaxInt64

// Table is one transaction's locks on host originals.
type Table struct {
	mu       sync.Mutex
	files    map[Key]*file
	released bool
}

// file is what the transaction holds on one host original: a description
// for its flock lock and one for its record locks (the two families do
// not interact on Linux, and a description holds one flock lock).
type file struct {
	flock *flockDesc
	rec   *recordDesc
}

type flockDesc struct {
	fd   int
	mode int // LOCK_SH or LOCK_EX
}

type recordDesc struct {
	fd       int
	writable bool
	// held are the ranges locked, sorted and disjoint.
	held []span
}

// span is a locked range [start, end) of type typ (F_RDLCK, F_WRLCK).
type span struct {
	start, end int64
	typ        int16
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{files: map[Key]*file{}} }

// ErrLost says the transaction lost a lock it held on the host: converting
// a flock lock from shared to exclusive removes the old one first (as
// Linux does for any process), and another process took the file before
// the shared lock could be taken again.
var ErrLost = errors.New("lost its shared flock lock on the host while converting it to exclusive")

// Waiter is called between attempts of a blocking request; an error ends
// the wait and is returned. A nil Waiter makes the request non-blocking.
type Waiter func() error

// Flock makes the transaction hold flock lock how (unix.LOCK_SH or
// unix.LOCK_EX) on host original key, of which original is a read-only
// descriptor (the caller keeps it). A shared lock where the transaction
// holds an exclusive one changes nothing: locks are never weakened before
// Release. A lock another process holds fails with EWOULDBLOCK, or is
// waited for if wait is set.
func (t *Table) Flock(key Key, original int, how int, wait Waiter) error {
	return t.retry(wait, func() error {
		f, err := t.fileLocked(key)
		if err != nil {
			return err
		}
		if f.flock == nil {
			fd, err := reopen(original, unix.O_RDONLY)
			if err != nil {
				return err
			}
			f.flock = &flockDesc{fd: fd}
		}
		d := f.flock
		if d.mode == unix.LOCK_EX || d.mode == how {
			return nil
		}
		err = unix.Flock(d.fd, how|unix.LOCK_NB)
		if err == nil {
			d.mode = how
			return nil
		}
		if d.mode == unix.LOCK_SH && err == unix.EWOULDBLOCK {
			// The kernel dropped the shared lock before it found the
			// conflict.
			if unix.Flock(d.fd, unix.LOCK_SH|unix.LOCK_NB) != nil {
				d.mode = 0
				return ErrLost
			}
		}
		return err
	})
}

// Record makes the transaction hold record lock typ (unix.F_RDLCK or
// unix.F_WRLCK) on bytes [start, end) of host original key (end EOF: to
// the end of the file), of which original is a read-only descriptor. A
// write lock needs a description open for writing, which the first one
// opens on the original (the caller checked that the requesting process
// has the file open for writing). A read lock leaves the parts of the
// range the transaction holds for writing as they are. A conflicting lock
// of another process fails with EAGAIN, or is waited for if wait is set.
func (t *Table) Record(key Key, original int, typ int16, start, end int64, wait Waiter) error {
	return t.retry(wait, func() error {
		f, err := t.fileLocked(key)
		if err != nil {
			return err
		}
		if f.rec == nil {
			fd, err := reopen(original, unix.O_RDONLY)
			if err != nil {
				return err
			}
			f.rec = &recordDesc{fd: fd}
		}
		d := f.rec
		if typ == unix.F_WRLCK && !d.writable {
			if err := d.reopenWritable(); err != nil {
				return err
			}
		}
		for _, p := range d.missing(span{start, end, typ}) {
			if err := setRecord(d.fd, unix.F_OFD_SETLK, p); err != nil {
				return err
			}
			d.held = overlay(d.held, p)
		}
		return nil
	})
}

// Test reports the first lock of another process that conflicts with
// record lock typ on [start, end) of host original key, as F_OFD_GETLK
// reports it (l_pid -1 for an OFD lock), or a lock of type F_UNLCK. The
// transaction's own locks conflict with nothing.
func (t *Table) Test(key Key, original int, typ int16, start, end int64) (unix.Flock_t, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fd := original
	if f := t.files[key]; f != nil && f.rec != nil {
		fd = f.rec.fd
	}
	lk := flockOf(span{start, end, typ})
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk); err != nil {
		return lk, err
	}
	return lk, nil
}

// Release lets go of every lock: the transaction has ended.
func (t *Table) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.files {
		if f.flock != nil {
			unix.Close(f.flock.fd)
		}
		if f.rec != nil {
			unix.Close(f.rec.fd)
		}
	}
	t.files = map[Key]*file{}
	t.released = true
}

// retry runs attempt under t.mu until it stops failing with a conflict,
// calling wait (without t.mu) between attempts.
func (t *Table) retry(wait Waiter, attempt func() error) error {
	for {
		t.mu.Lock()
		err := attempt()
		t.mu.Unlock()
		if wait == nil || (err != unix.EWOULDBLOCK && err != unix.EAGAIN) {
			return err
		}
		if werr := wait(); werr != nil {
			return werr
		}
	}
}

func (t *Table) fileLocked(key Key) (*file, error) {
	if t.released {
		return nil, errors.New("host locks taken after the transaction ended")
	}
	f := t.files[key]
	if f == nil {
		f = &file{}
		t.files[key] = f
	}
	return f, nil
}

// reopenWritable moves d's locks to a new description of the same file
// open for reading and writing. Taking the same read locks through a
// second description of the transaction cannot conflict with anyone: no
// other process can hold a write lock where it holds a read lock.
func (d *recordDesc) reopenWritable() error {
	fd, err := reopen(d.fd, unix.O_RDWR)
	if err != nil {
		return fmt.Errorf("open the host original for a write lock: %w", err)
	}
	for _, s := range d.held {
		if err := setRecord(fd, unix.F_OFD_SETLK, s); err != nil {
			unix.Close(fd)
			return fmt.Errorf("move the transaction's read locks to a writable description: %w", err)
		}
	}
	unix.Close(d.fd)
	d.fd, d.writable = fd, true
	return nil
}

// reopen opens a new description of the file fd is open on: the table's
// locks must be on descriptions of its own, which live exactly as long as
// it holds them (flock and OFD locks go with their description's last
// close). O_NOATIME where allowed: locking reads nothing.
func reopen(fd int, accmode int) (int, error) {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	flags := accmode | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
	nfd, err := unix.Open(p, flags|unix.O_NOATIME, 0)
	if err == unix.EPERM {
		nfd, err = unix.Open(p, flags, 0)
	}
	return nfd, err
}

// missing returns the locks to take so that d holds at least s: all of s
// for a write lock; for a read lock, the parts of s not held for writing
// (taking a read lock over them would weaken them).
func (d *recordDesc) missing(s span) []span {
	if covered(d.held, s) {
		return nil
	}
	if s.typ == unix.F_WRLCK {
		return []span{s}
	}
	var out []span
	at := s.start
	for _, h := range d.held {
		if h.end <= at || h.typ != unix.F_WRLCK {
			continue
		}
		if h.start >= s.end {
			break
		}
		if h.start > at {
			out = append(out, span{at, h.start, unix.F_RDLCK})
		}
		at = h.end
	}
	if at < s.end {
		out = append(out, span{at, s.end, unix.F_RDLCK})
	}
	return out
}

// covered reports whether held locks all of s with s's type or a write
// lock.
func covered(held []span, s span) bool {
	at := s.start
	for _, h := range held {
		if h.end <= at {
			continue
		}
		if h.start > at || h.typ != s.typ && h.typ != unix.F_WRLCK {
			return false
		}
		at = h.end
		if at >= s.end {
			return true
		}
	}
	return at >= s.end
}

// overlay returns held with s locked over it (s's type replaces what was
// there), sorted, disjoint and with neighbours of one type merged.
func overlay(held []span, s span) []span {
	var out []span
	for _, h := range held {
		if h.end <= s.start || h.start >= s.end {
			out = append(out, h)
			continue
		}
		if h.start < s.start {
			out = append(out, span{h.start, s.start, h.typ})
		}
		if h.end > s.end {
			out = append(out, span{s.end, h.end, h.typ})
		}
	}
	out = append(out, s)
	sortSpans(out)
	merged := out[:0]
	for _, h := range out {
		if n := len(merged); n > 0 && merged[n-1].end == h.start && merged[n-1].typ == h.typ {
			merged[n-1].end = h.end
			continue
		}
		merged = append(merged, h)
	}
	return merged
}

func sortSpans(s []span) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].start < s[j-1].start; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func flockOf(s span) unix.Flock_t {
	lk := unix.Flock_t{Type: s.typ, Whence: 0, Start: s.start}
	if s.end != EOF {
		lk.Len = s.end - s.start
	}
	return lk
}

func setRecord(fd int, cmd int, s span) error {
	lk := flockOf(s)
	return unix.FcntlFlock(uintptr(fd), cmd, &lk)
}
