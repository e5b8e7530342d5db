package fastlookup

import (
	"sync/atomic"
)

// The agent's side of a ring, in Go: the reference of fastlookup.h's
// protocol (steps 3 and 6), which the tests of the drain and of the feed
// write their records with. The agent itself is C.

// Reserve takes the next slot of the ring as the agent does (a CAS of the
// head, after checking the room the shared tail leaves), or reports the
// ring full.
func (g *Ring) Reserve() (pos uint64, ok bool) {
	for {
		h := atomic.LoadUint64(&g.r.head)
		if h-atomic.LoadUint64(&g.r.tail) >= RingN {
			return 0, false
		}
		if atomic.CompareAndSwapUint64(&g.r.head, h, h+1) {
			return h, true
		}
	}
}

// Publish fills reserved slot pos with rec, as given (nothing is checked:
// a test may write what a misbehaving program would), and publishes it.
// A path longer than the slot is cut.
func (g *Ring) Publish(pos uint64, rec *Record) {
	s := &g.r.slots[pos%RingN]
	s.generation, s.nr, s.result = rec.Generation, int32(rec.Nr), rec.Result
	s.pathLen = uint32(copy(s.path[:PathMax-1], rec.Path))
	s.path[s.pathLen] = 0
	s.flags = 0
	if rec.Observed {
		s.flags = flObserved
	}
	if rec.Relative {
		s.flags |= flRelative
	}
	if rec.Descriptor {
		s.flags |= flDescriptor
	}
	s.dirDev, s.dirIno = rec.DirDev, rec.DirIno
	s.dev, s.ino, s.mode, s.uid, s.gid, s.size = rec.Dev, rec.Ino, rec.Mode, rec.UID, rec.GID, rec.Size
	s.mtimeSec, s.mtimeNsec, s.ctimeSec, s.ctimeNsec = rec.Mtime.Sec, rec.Mtime.Nsec, rec.Ctime.Sec, rec.Ctime.Nsec
	atomic.StoreUint64(&s.seq, pos+1) // release: after the record
}

// Append reserves a slot and publishes rec in it; false when the ring is
// full.
func (g *Ring) Append(rec *Record) bool {
	pos, ok := g.Reserve()
	if ok {
		g.Publish(pos, rec)
	}
	return ok
}
