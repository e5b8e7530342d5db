package vfs

import (
	"sort"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// Times of staged objects in a deterministic run (Tx.StampTimes). The
// host kernel stamps a staged file with its own clock when a process
// writes it through a descriptor, which the supervisor does not see. So
// the view sets the times of a staged object from Now whenever it finds
// them changed behind its back — at a stat through the view, and for every
// staged object at commit — on the object itself, so that fstat, which
// the kernel serves, shows the same times from then on. ctime cannot be
// set by any call and stays the kernel's (docs/semantics.md §10).

// stampLocked gives staged object n, whose attributes st were just read,
// the time of Now if its mtime is not the one the view last set or saw
// set, and updates st.
//
// Preconditions: v.mu held.
func (v *Tx) stampLocked(n *Node, st *unix.Stat_t) error {
	if !v.StampTimes || n.anon || n.staged == "" || n.keepsIdentity() {
		return nil
	}
	if n.stamped != nil && *n.stamped == st.Mtim {
		return nil
	}
	t := v.nowLocked()
	if n.changed != nil {
		t = *n.changed // a directory's entries: the view's own time
	}
	return v.setStampLocked(n, t, st)
}

// setStampLocked sets n's staged object's atime and mtime to t.
//
// Preconditions: v.mu held.
func (v *Tx) setStampLocked(n *Node, t unix.Timespec, st *unix.Stat_t) error {
	if err := unix.UtimesNanoAt(n.area.fd, n.staged, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	st.Atim, st.Mtim = t, t
	n.stamped = &t
	return nil
}

// sawTimesLocked records the mtime n's staged object has after the
// program set its times (utimensat): not to be stamped over.
//
// Preconditions: v.mu held.
func (v *Tx) sawTimesLocked(n *Node) {
	if !v.StampTimes || n.anon || n.staged == "" || n.keepsIdentity() {
		return
	}
	var st unix.Stat_t
	if unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		t := st.Mtim
		n.stamped = &t
	}
}

// stampAllLocked stamps, before commit, every staged object written since
// the view last looked, all with one reading of Now, so that the order in
// which they are visited does not matter.
//
// Preconditions: v.mu held.
func (v *Tx) stampAllLocked() error {
	if !v.StampTimes {
		return nil
	}
	var t *unix.Timespec
	seen := map[*Node]bool{}
	for _, n := range v.nodes {
		if seen[n] || n.anon || n.staged == "" || n.keepsIdentity() || n.removed {
			continue
		}
		seen[n] = true
		var st unix.Stat_t
		if err := unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone from the staging area: nothing to place
		}
		if n.stamped != nil && *n.stamped == st.Mtim {
			continue
		}
		at := n.changed
		if at == nil {
			if t == nil {
				now := v.nowLocked()
				t = &now
			}
			at = t
		}
		if err := v.setStampLocked(n, *at, &st); err != nil {
			return err
		}
	}
	return nil
}

// newDirTimesLocked returns, with StampTimes, the ops that give each
// directory the transaction created its view times once the write-through
// has placed its entries in it (each placement moves a directory's mtime
// on the host), sorted by path. Host directories keep the host kernel's
// times (docs/semantics.md §10).
//
// Preconditions: v.mu held; stampAllLocked has run.
func (v *Tx) newDirTimesLocked() []store.RedoOp {
	if !v.StampTimes {
		return nil
	}
	var ops []store.RedoOp
	seen := map[*Node]bool{}
	for _, n := range v.nodes {
		if seen[n] || !n.isDir() || n.staged == "" || n.keepsIdentity() || n.removed {
			continue
		}
		at := n.changed // the last change of its entries, which the view shows
		if at == nil {
			at = n.stamped
		}
		if at == nil {
			continue
		}
		seen[n] = true
		p, ok := v.placeLocked(n)
		if !ok || p.path == "" {
			continue
		}
		t := store.Timespec{Sec: at.Sec, Nsec: at.Nsec}
		ops = append(ops, store.RedoOp{Kind: store.OpSetattr, Path: p.path, Ino: n.replayIno,
			Attrs: store.AttrAtime | store.AttrMtime, Atime: t, Mtime: t})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Path < ops[j].Path })
	return ops
}

// firstVirtualIno is the first virtual inode number.
const firstVirtualIno = 100000

// inoLocked is the inode number the view shows for n: its viewIno, or
// with VirtualInodes a number given at n's first showing, kept for the
// run. A host original keeps its number when it is staged (its node's
// host identity does not change), unlike viewIno's; hard links, one node,
// share it. stat, statx, fstat (trapped in deterministic runs and served
// as fstatat) and getdents all show it.
//
// Preconditions: v.mu held.
func (v *Tx) inoLocked(n *Node) uint64 {
	if !v.VirtualInodes {
		return n.viewIno()
	}
	if n.host != (FileID{}) {
		return v.virtualInoLocked(n.host)
	}
	if n.vino == 0 {
		v.vinoN++
		n.vino = firstVirtualIno + v.vinoN
	}
	return n.vino
}

// virtualInoLocked is the virtual inode number of host original id.
//
// Preconditions: v.mu held.
func (v *Tx) virtualInoLocked(id FileID) uint64 {
	if ino, ok := v.vinos[id]; ok {
		return ino
	}
	if v.vinos == nil {
		v.vinos = map[FileID]uint64{}
	}
	v.vinoN++
	v.vinos[id] = firstVirtualIno + v.vinoN
	return v.vinos[id]
}
