package fastlookup

import (
	"strings"
	"sync/atomic"
	"unsafe"
)

// Tree is a process tree's shared sets (struct fl_tree): what the agent
// consults before it makes a lookup natively. The supervisor alone writes
// it, through the methods below, which one goroutine at a time may call
// (the view's lock serializes them); the programs map it read-only.
//
// Alongside the shared tables it keeps their authoritative copy, which the
// feed consults: the generation at which each path and object changed, and
// the fast directories by path. The shared tables are only hashes, and a
// program could not write them anyway.
type Tree struct {
	mem *shared
	t   *treeLayout

	// gen is the generation the next Publish stores; dirty says Change or
	// ChangeObject added something since the last Publish.
	gen   uint64
	dirty bool
	// overflowed: a set filled up; the fast path is off for good.
	overflowed bool

	changed      map[string]*changeMark
	changedUsed  int
	objects      map[[2]uint64]uint64
	fastDirs     map[string]int // path → slot
	fastDirsUsed int            // slots ever taken, removed ones included
	// fastDirsByDir are the paths below each directory that lead to fast
	// directories; linked are the paths entered there.
	fastDirsByDir map[string][]string
	linked        map[string]bool
	// dirIDs are the fast directories by identity (the shared dirids
	// table), each with the first path it was a fast directory at; kept
	// after the directory stops being one, for the records made before.
	dirIDs map[[2]uint64]*dirID
	// links are the symlinks published (the shared links table), each
	// with its target.
	links map[string]string
	// natives are the own objects published in the shared natives table,
	// by identity, with their slot (-1 once dropped); nativesUsed the
	// slots ever taken.
	natives     map[[2]uint64]int
	nativesUsed int
}

// dirID is a fast directory known by its identity: its path, and its slot
// in the shared dirids table, -1 once removed (the directory's path
// changed, or the identity was found at a second path: a bind mount).
type dirID struct {
	path string
	slot int
}

// changeMark is when a path changed: the generation that published its
// first entry of each kind (0: none).
type changeMark struct {
	self, subtree uint64
}

// NewTree makes a tree's shared memory, disabled: every call is forwarded
// until Enable.
func NewTree() (*Tree, error) {
	mem, err := newShared("txexec-fastlookup-tree", int(unsafe.Sizeof(treeLayout{})), true)
	if err != nil {
		return nil, err
	}
	t := &Tree{
		mem: mem, t: (*treeLayout)(mem.ptr()), gen: 1,
		changed: map[string]*changeMark{}, objects: map[[2]uint64]uint64{},
		fastDirs: map[string]int{}, fastDirsByDir: map[string][]string{}, linked: map[string]bool{},
		dirIDs: map[[2]uint64]*dirID{}, links: map[string]string{}, natives: map[[2]uint64]int{},
	}
	t.t.version = LayoutVersion
	return t, nil
}

// Close unmaps the supervisor's mapping and closes its descriptor.
func (t *Tree) Close() { t.mem.close() }

// ReadOnlyFD opens a descriptor on the tree's memfd that can only be mapped
// read-only, for the programs; the caller owns it.
func (t *Tree) ReadOnlyFD() (int, error) { return t.mem.readOnlyFD() }

// Enable turns the fast path on or off for the whole tree (off in
// deterministic runs, after a chroot, while another view serves some
// threads, …). It stays off after an overflow.
func (t *Tree) Enable(on bool) {
	v := uint32(0)
	if on && !t.overflowed {
		v = 1
	}
	atomic.StoreUint32(&t.t.enabled, v)
}

// Enabled reports the enabled flag as the agent reads it.
func (t *Tree) Enabled() bool { return atomic.LoadUint32(&t.t.enabled) != 0 }

// Generation is the generation the agent reads now.
func (t *Tree) Generation() uint64 { return atomic.LoadUint64(&t.t.generation) }

// Change adds path (absolute and clean) to the changed set with kind k,
// and, for ChangedSubtree, removes the fast directories at and under it.
// Nothing of it is published to the agent's ordering until Publish.
func (t *Tree) Change(path string, k Kind) {
	m := t.changed[path]
	if m == nil {
		m = &changeMark{}
		t.changed[path] = m
	}
	switch {
	case k == ChangedSubtree && m.subtree == 0:
		m.subtree = t.gen
		t.removeFastDirsUnder(path)
	case k == ChangedSelf && m.self == 0 && m.subtree == 0:
		m.self = t.gen
	default:
		return
	}
	t.dirty = true
	t.storeChanged(PathKey(path), k)
}

// storeChanged adds or raises the shared entry for key.
func (t *Tree) storeChanged(key uint64, k Kind) {
	for i := key & (ChangedN - 1); ; i = (i + 1) & (ChangedN - 1) {
		e := &t.t.changed[i]
		switch atomic.LoadUint64(&e.key) {
		case key:
			if Kind(atomic.LoadUint64(&e.kind)) < k {
				atomic.StoreUint64(&e.kind, uint64(k))
			}
			return
		case KeyEmpty:
			if t.changedUsed+1 > maxLoad(ChangedN) {
				t.overflow()
				return
			}
			t.changedUsed++
			atomic.StoreUint64(&e.kind, uint64(k))
			atomic.StoreUint64(&e.key, key)
			return
		}
	}
}

// ChangeObject adds a host object the transaction changed to the changed
// objects: the agent forwards a call that observes it by any name (a hard
// link the changed set does not list).
func (t *Tree) ChangeObject(dev, ino uint64) {
	id := [2]uint64{dev, ino}
	if _, ok := t.objects[id]; ok {
		return
	}
	t.objects[id] = t.gen
	t.dirty = true
	key := ObjectKey(dev, ino)
	for i := key & (ObjectsN - 1); ; i = (i + 1) & (ObjectsN - 1) {
		switch atomic.LoadUint64(&t.t.objects[i]) {
		case key:
			return
		case KeyEmpty:
			if len(t.objects) > maxLoad(ObjectsN) {
				t.overflow()
				return
			}
			atomic.StoreUint64(&t.t.objects[i], key)
			return
		}
	}
}

// overflow turns the fast path off for good: a set is full, and the agent
// could no longer see every change.
func (t *Tree) overflow() {
	t.overflowed = true
	atomic.StoreUint32(&t.t.enabled, 0)
}

// Overflowed reports whether a set filled up (the fast path is off).
func (t *Tree) Overflowed() bool { return t.overflowed }

// Publish makes everything Change and ChangeObject added visible in the
// agent's order: it increments the generation with release ordering, after
// every entry. The caller then makes the change. It returns the generation
// now published.
func (t *Tree) Publish() uint64 {
	if t.dirty {
		atomic.StoreUint64(&t.t.generation, t.gen) // release: after the entries
		t.gen++
		t.dirty = false
	}
	return atomic.LoadUint64(&t.t.generation)
}

// ChangedAt is the first generation at which path, or a path above it as a
// subtree, was changed; ok false if it never was.
func (t *Tree) ChangedAt(path string) (gen uint64, ok bool) {
	first := func(g uint64) {
		if g != 0 && (!ok || g < gen) {
			gen, ok = g, true
		}
	}
	if m := t.changed[path]; m != nil {
		first(m.self)
		first(m.subtree)
	}
	for p := path; p != "/"; {
		p = parentOf(p)
		if m := t.changed[p]; m != nil {
			first(m.subtree)
		}
	}
	return gen, ok
}

// NameChangedAt is ChangedAt for a lookup that reads no attribute of what
// it finds: the first generation at which path, or a path above it, was
// changed as a subtree (its name made, removed, renamed); the path's own
// attributes changing does not count.
func (t *Tree) NameChangedAt(path string) (gen uint64, ok bool) {
	for p := path; ; p = parentOf(p) {
		if m := t.changed[p]; m != nil && m.subtree != 0 && (!ok || m.subtree < gen) {
			gen, ok = m.subtree, true
		}
		if p == "/" {
			return gen, ok
		}
	}
}

// ObjectChangedAt is the generation at which the host object (dev, ino)
// was changed; ok false if it never was.
func (t *Tree) ObjectChangedAt(dev, ino uint64) (gen uint64, ok bool) {
	gen, ok = t.objects[[2]uint64{dev, ino}]
	return gen, ok
}

// Covered reports whether path or a path above it is in the changed set as
// a subtree.
func (t *Tree) Covered(path string) bool {
	for p := path; ; p = parentOf(p) {
		if m := t.changed[p]; m != nil && m.subtree != 0 {
			return true
		}
		if p == "/" {
			return false
		}
	}
}

// AddFastDir adds a host directory the view walked to the fast
// directories: path is its absolute path, reached without a symlink, and
// (dev, ino) its identity. It reports whether it is one now; a path under a
// changed subtree never is, and none is added once the table is full.
func (t *Tree) AddFastDir(path string, dev, ino uint64) bool {
	if _, ok := t.fastDirs[path]; ok {
		return true
	}
	if t.Covered(path) || t.fastDirsUsed+1 > maxLoad(FastDirsN) {
		return false
	}
	key := PathKey(path)
	for i := key & (FastDirsN - 1); ; i = (i + 1) & (FastDirsN - 1) {
		e := &t.t.fastDirs[i]
		if atomic.LoadUint64(&e.key) != KeyEmpty {
			continue
		}
		t.fastDirsUsed++
		e.dev, e.ino = dev, ino
		atomic.StoreUint64(&e.key, key) // release: after the identity
		t.fastDirs[path] = int(i)
		// Link the path to its parent, and each ancestor not linked yet
		// to its own, fast or not, so that removal under any of them
		// finds it.
		for p := path; p != "/" && !t.linked[p]; p = parentOf(p) {
			t.linked[p] = true
			t.fastDirsByDir[parentOf(p)] = append(t.fastDirsByDir[parentOf(p)], p)
		}
		t.addDirID(path, dev, ino)
		return true
	}
}

// addDirID adds fast directory path to the shared dirids table under its
// identity, unless that identity already had another path: then it is
// removed from the table, for good (the agent could not tell which path a
// descriptor of it stands for).
func (t *Tree) addDirID(path string, dev, ino uint64) {
	id := [2]uint64{dev, ino}
	if d := t.dirIDs[id]; d != nil {
		if d.path != path {
			t.removeDirID(d)
		}
		return
	}
	key := ObjectKey(dev, ino)
	for i := key & (FastDirsN - 1); ; i = (i + 1) & (FastDirsN - 1) {
		e := &t.t.dirIDs[i]
		if atomic.LoadUint64(&e.key) != KeyEmpty {
			continue // at most as many entries as fast directories: an empty slot exists
		}
		e.prefix, e.dev, e.ino = dirPrefix(path), dev, ino
		atomic.StoreUint64(&e.key, key) // release: after the entry
		t.dirIDs[id] = &dirID{path: path, slot: int(i)}
		return
	}
}

// removeDirID takes d out of the shared dirids table.
func (t *Tree) removeDirID(d *dirID) {
	if d.slot >= 0 {
		atomic.StoreUint64(&t.t.dirIDs[d.slot].key, KeyRemoved)
		d.slot = -1
	}
}

// DirPath is the path of the fast directory the agent knew by identity
// (dev, ino), which a record relative to it names: the first path it was a
// fast directory at, whether it still is one or not.
func (t *Tree) DirPath(dev, ino uint64) (string, bool) {
	d := t.dirIDs[[2]uint64{dev, ino}]
	if d == nil {
		return "", false
	}
	return d.path, true
}

// IsFastDir reports whether path is a fast directory now.
func (t *Tree) IsFastDir(path string) bool {
	_, ok := t.fastDirs[path]
	return ok
}

// removeFastDirsUnder removes path and every fast directory below it.
func (t *Tree) removeFastDirsUnder(path string) {
	if i, ok := t.fastDirs[path]; ok {
		e := &t.t.fastDirs[i]
		atomic.StoreUint64(&e.key, KeyRemoved)
		delete(t.fastDirs, path)
		if d := t.dirIDs[[2]uint64{e.dev, e.ino}]; d != nil && d.path == path {
			t.removeDirID(d)
		}
	}
	kids := t.fastDirsByDir[path]
	delete(t.fastDirsByDir, path)
	delete(t.linked, path)
	for _, k := range kids {
		t.removeFastDirsUnder(k)
	}
}

// AddLink publishes symlink path, which the view followed to target, for
// the agent to follow lexically (docs/fastpath.md §4.5): path is the
// symlink's absolute path in a fast directory, target the absolute clean
// path the view's resolution of it reached without another symlink (a fast
// directory, or a name in one). The agent checks the changed set at the
// symlink's path and then at the target's, so a change of either, made
// later, still has its calls forwarded; the entry itself is never
// changed. It reports whether the link is published: not under a changed
// subtree, a target that fits, room left (else the agent forwards such
// paths, as before).
func (t *Tree) AddLink(path, target string) bool {
	if old, ok := t.links[path]; ok {
		return old == target
	}
	if t.Covered(path) || len(target) >= PathMax-8 || len(t.links)+1 > maxLoad(LinksN) {
		return false
	}
	key := PathKey(path)
	for i := key & (LinksN - 1); ; i = (i + 1) & (LinksN - 1) {
		e := &t.t.links[i]
		if atomic.LoadUint64(&e.key) != KeyEmpty {
			continue // fewer entries than slots: an empty slot exists
		}
		n := copy(e.target[:], target)
		e.target[n] = 0
		atomic.StoreUint64(&e.key, key) // release: after the target
		t.links[path] = target
		return true
	}
}

// Link is the target symlink path was published with.
func (t *Tree) Link(path string) (string, bool) {
	target, ok := t.links[path]
	return target, ok
}

// parentOf is the directory of a clean absolute path ("/" for "/").
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// AddNative publishes an object of the view's own, (dev, ino), as one whose
// fstat the agent answers natively (struct fl_native, docs/fastpath.md
// §16): the view's stat of it is, field for field, the kernel's fstat of
// it. It reports whether it is published: not once the table is full (its
// fstat is then forwarded, as any changed object's), nor once dropped.
// The caller publishes it before a program can hold a descriptor of it.
func (t *Tree) AddNative(dev, ino uint64) bool {
	id := [2]uint64{dev, ino}
	if slot, ok := t.natives[id]; ok {
		return slot >= 0
	}
	if t.nativesUsed+1 > maxLoad(NativesN) {
		return false
	}
	key := ObjectKey(dev, ino)
	for i := key & (NativesN - 1); ; i = (i + 1) & (NativesN - 1) {
		e := &t.t.natives[i]
		if atomic.LoadUint64(&e.key) != KeyEmpty {
			continue // at most maxLoad slots taken: an empty slot exists
		}
		t.nativesUsed++
		e.dev, e.ino = dev, ino
		atomic.StoreUint64(&e.key, key) // release: after the identity
		t.natives[id] = int(i)
		return true
	}
}

// DropNative takes (dev, ino) out of the natives table for good: the view
// is about to answer its stat otherwise than the kernel's fstat (a ctime
// or link count of its own). The agent checks the table after its fstat,
// so one that still finds the entry made its call before the change.
func (t *Tree) DropNative(dev, ino uint64) {
	id := [2]uint64{dev, ino}
	slot, ok := t.natives[id]
	if ok && slot >= 0 {
		atomic.StoreUint64(&t.t.natives[slot].key, KeyRemoved)
	}
	t.natives[id] = -1
}
