package vfs

import (
	"slices"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// Where the journal names an object. An op on an object names it by a host
// path it has at that point of the replay. A directory has one name, its
// place in the view, until it is removed. A non-directory may have several
// (hard links), and is reached by descriptor after any of them is removed:
// the journal then names it by another name it still has. An object with
// no name left and no link anywhere else (unlinked, a directory removed or
// renamed over) can still be changed through a descriptor, as in Linux, but
// nothing of that reaches the host: no op names it. A hard-linked host file
// whose last name the view knew is removed while it keeps names the view
// never looked up is named by the removed name, by ops placed just before
// its removal: an attribute or data change of an inode does not depend on
// the names around it, so it can be replayed earlier, where that name
// still stands for it.

// nameRef is one name of a non-directory: name in directory dir.
type nameRef struct {
	dir  *Node
	name string
}

// grave is the journal op that removed the last name the view knew of a
// non-directory with links elsewhere: at is its index in Tx.journal, path
// the name it removed.
type grave struct {
	at   int
	path string
}

// place is where the journal can name an object now: path, at the end of
// the journal (before < 0) or just before op before (a grave). An empty
// path: the object has no name left anywhere, and changes to it have no
// effect at commit.
type place struct {
	path   string
	before int
}

// addNameLocked records that non-directory n is name in dir, and forgets
// the names that no longer are n's: every call that makes a name n's again
// records it again.
//
// Preconditions: v.mu held.
func (n *Node) addNameLocked(dir *Node, name string) {
	if n.isDir() {
		return
	}
	n.names = slices.DeleteFunc(n.names, func(r nameRef) bool {
		return r.dir == dir && r.name == name || !r.live(n)
	})
	n.names = append(n.names, nameRef{dir, name})
}

// live reports whether r still is a name of n in the view.
func (r nameRef) live(n *Node) bool { return !r.dir.removed && r.dir.entryIs(r.name, n) }

// liveNameLocked returns a name non-directory n has in the view, or ok
// false.
//
// Preconditions: v.mu held.
func (v *Tx) liveNameLocked(n *Node) (path string, ok bool) {
	if n.locDir != nil && (nameRef{n.locDir, n.locName}).live(n) {
		return childPath(n.locDir.viewPathLocked(), n.locName), true
	}
	for _, r := range n.names {
		if r.live(n) {
			return childPath(r.dir.viewPathLocked(), r.name), true
		}
	}
	return "", false
}

// inViewLocked reports whether directory n is reachable from the view's
// root (it and none of its ancestors removed).
//
// Preconditions: v.mu held.
func (v *Tx) inViewLocked(n *Node) bool {
	for d := n; d != v.root; d = d.parent {
		if d == nil || d.removed {
			return false
		}
	}
	return true
}

// placeLocked is where the journal can name n now (see place); ok is
// false when the view lost track of a name n must still have.
//
// Preconditions: v.mu held.
func (v *Tx) placeLocked(n *Node) (p place, ok bool) {
	p.before = -1
	switch {
	case n.anon:
		return p, true // an unnamed O_TMPFILE: only linkat names it
	case n.isDir():
		if v.inViewLocked(n) {
			p.path = n.viewPathLocked()
		}
		return p, true
	}
	if path, ok := v.liveNameLocked(n); ok {
		p.path = path
		return p, true
	}
	if n.nlinkSet && n.nlink == 0 {
		return p, true
	}
	if n.grave != nil {
		p.path, p.before = n.grave.path, n.grave.at
		return p, true
	}
	return p, false
}

// journalOnLocked journals op, a change of object n named as placeLocked
// names it: appended, placed before n's grave, or dropped when n has no
// name left anywhere.
//
// Preconditions: v.mu held.
func (v *Tx) journalOnLocked(n *Node, op store.RedoOp) {
	p, ok := v.placeLocked(n)
	switch {
	case !ok || p.path == "":
	case p.before >= 0:
		v.insertJournalLocked(p.before, op)
	default:
		v.journalLocked(op)
	}
}

// insertJournalLocked places op at index at of the journal, before the op
// that was there; the graves at or after it move with their ops.
//
// Preconditions: v.mu held.
func (v *Tx) insertJournalLocked(at int, op store.RedoOp) {
	v.journal = slices.Insert(v.journal, at, op)
	v.gen++
	for _, g := range v.graves {
		if g.at >= at {
			g.at++
		}
	}
}

// buryLocked notes that the op just journaled removed name path of
// non-directory n: if n has no other name in the view but still has
// links (names the view never looked up), later ops on it go before that
// op, where path still names it. Only for objects changed in place: a
// copy-up that replaces its object renames a new inode to the path, which
// the removal (expecting the old one) would then leave there.
//
// Preconditions: v.mu held; the removal was the last op journaled.
func (v *Tx) buryLocked(n *Node, path string) {
	if n.isDir() || n.anon || !n.inPlace && !n.keepsIdentity() {
		return
	}
	if _, ok := v.liveNameLocked(n); ok || !n.nlinkSet || n.nlink == 0 {
		return
	}
	if n.grave == nil {
		n.grave = &grave{}
		v.graves = append(v.graves, n.grave)
	}
	n.grave.at, n.grave.path = len(v.journal)-1, path
}

// linkSourceLocked names the object of linkat's old path for the link op:
// the name the call gave, or for a descriptor (AT_EMPTY_PATH,
// /proc/self/fd/N) a name it has. An object with no link left cannot get
// one (ENOENT, as vfs_link answers for a zero link count). A hard-linked
// host file whose remaining names the view never saw is named by its
// grave, where it is linked into its mount's staging area first: an
// anchor name, which stands for it until the area goes after commit.
//
// Preconditions: v.mu held; t.node is the object.
func (v *Tx) linkSourceLocked(t target) (string, error) {
	if t.dir != nil {
		return childPath(t.dir.viewPathLocked(), t.name), nil
	}
	n := t.node
	p, ok := v.placeLocked(n)
	switch {
	case !ok || p.path != "" && p.before >= 0 && n.hostParent == nil:
		return "", unix.EINVAL
	case p.path == "":
		return "", unix.ENOENT
	case p.before < 0:
		return p.path, nil
	}
	a, err := v.areaForLocked(n.hostParent, p.path)
	if err != nil {
		return "", err
	}
	anchor := a.pathOf("link-" + v.newStagedNameLocked())
	v.insertJournalLocked(p.before, store.RedoOp{Kind: store.OpLink, Src: p.path, Path: anchor, Ino: n.replayIno})
	return anchor, nil
}
