package crashfs

import (
	"maps"
	"path"
	"slices"
	"syscall"
	"time"
)

// rootIno is the inode number of the root directory.
const rootIno = 1

// version is what an inode holds, once as served (volatile) and once as
// it would be found after a power cut (durable).
type version struct {
	mode     uint32 // type and permission bits
	uid, gid uint32
	rdev     uint32
	atime    time.Time
	mtime    time.Time
	ctime    time.Time
	data     []byte // a regular file's contents, a symlink's target
	xattrs   map[string][]byte
}

func (v version) clone() version {
	c := v
	c.data = slices.Clone(v.data)
	c.xattrs = maps.Clone(v.xattrs)
	for k, b := range c.xattrs {
		c.xattrs[k] = slices.Clone(b)
	}
	return c
}

func (v version) isDir() bool { return v.mode&syscall.S_IFMT == syscall.S_IFDIR }

// inode is one object. Inodes are never freed while a mount lives: an
// unlinked one may still be open, or named by the durable state.
type inode struct {
	ino uint64
	vol version
	dur version
	// entries (directories) are the names served; durable entries are
	// those a cut leaves, kept up to date by the operations log.
	entries    map[string]uint64
	durEntries map[string]uint64
	// links counts the served names of a non-directory.
	links uint32
}

// entryChange is one name of one directory set to an inode (0: removed).
type entryChange struct {
	dir  uint64
	name string
	ino  uint64
}

// nsOp is one change of names not yet durable: a create or unlink touches
// one directory, a rename or exchange one or two.
type nsOp struct {
	changes []entryChange
}

func (o nsOp) touches(dir uint64) bool {
	for _, c := range o.changes {
		if c.dir == dir {
			return true
		}
	}
	return false
}

// tree is the model: every inode and the log of name changes not yet
// durable, oldest first. The caller holds FS.mu.
type tree struct {
	inodes  map[uint64]*inode
	nextIno uint64
	pending []nsOp
}

func newTree() *tree {
	now := time.Now()
	root := version{mode: syscall.S_IFDIR | 0o755, atime: now, mtime: now, ctime: now}
	t := &tree{inodes: map[uint64]*inode{}, nextIno: rootIno + 1}
	t.inodes[rootIno] = &inode{ino: rootIno, vol: root, dur: root.clone(),
		entries: map[string]uint64{}, durEntries: map[string]uint64{}}
	return t
}

// create makes a new inode; its durable version is what it is made with,
// without data (see the package doc).
func (t *tree) create(v version) *inode {
	n := &inode{ino: t.nextIno, vol: v, dur: v.clone()}
	t.nextIno++
	if v.isDir() {
		n.entries, n.durEntries = map[string]uint64{}, map[string]uint64{}
	}
	if v.mode&syscall.S_IFMT != syscall.S_IFLNK {
		n.dur.data = nil
	}
	t.inodes[n.ino] = n
	return n
}

// nlink is the served link count.
func (t *tree) nlink(n *inode) uint32 {
	if !n.vol.isDir() {
		return n.links
	}
	k := uint32(2)
	for _, ino := range n.entries {
		if t.inodes[ino].vol.isDir() {
			k++
		}
	}
	return k
}

// change applies a change of names to the served tree and logs it.
func (t *tree) change(changes ...entryChange) {
	now := time.Now()
	for _, c := range changes {
		d := t.inodes[c.dir]
		if old, ok := d.entries[c.name]; ok && !t.inodes[old].vol.isDir() {
			t.inodes[old].links--
			t.inodes[old].vol.ctime = now
		}
		if c.ino == 0 {
			delete(d.entries, c.name)
		} else {
			d.entries[c.name] = c.ino
			n := t.inodes[c.ino]
			if !n.vol.isDir() {
				n.links++
			}
		}
		d.vol.mtime, d.vol.ctime = now, now
	}
	t.pending = append(t.pending, nsOp{changes: changes})
}

// syncInode makes n's attributes, and with data its contents, durable;
// for a directory also every pending change of its entries.
func (t *tree) syncInode(n *inode, data bool) {
	if n.vol.isDir() {
		t.syncEntries(n.ino)
		n.dur = n.vol.clone()
		return
	}
	if data && n.vol.mode&syscall.S_IFMT == syscall.S_IFREG {
		// fdatasync: contents and size, not the other attributes.
		n.dur.data = slices.Clone(n.vol.data)
		return
	}
	n.dur = n.vol.clone()
}

// syncEntries makes durable every pending change of dir's entries, with
// every earlier change of the other directories those touch (their
// order), in order.
func (t *tree) syncEntries(dir uint64) {
	last := -1
	for i, op := range t.pending {
		if op.touches(dir) {
			last = i
		}
	}
	if last < 0 {
		return
	}
	// Walk back from the last op of dir: an op is taken if it touches a
	// directory an op taken after it touches.
	take := make([]bool, last+1)
	dirs := map[uint64]bool{dir: true}
	for i := last; i >= 0; i-- {
		op := t.pending[i]
		for _, c := range op.changes {
			if dirs[c.dir] {
				take[i] = true
				break
			}
		}
		if take[i] {
			for _, c := range op.changes {
				dirs[c.dir] = true
			}
		}
	}
	var rest []nsOp
	for i, op := range t.pending {
		if i > last || !take[i] {
			rest = append(rest, op)
			continue
		}
		for _, c := range op.changes {
			de := t.inodes[c.dir].durEntries
			if c.ino == 0 {
				delete(de, c.name)
			} else {
				de[c.name] = c.ino
			}
		}
	}
	t.pending = rest
}

// syncAll makes everything durable.
func (t *tree) syncAll() {
	for _, n := range t.inodes {
		if n.vol.isDir() {
			n.durEntries = maps.Clone(n.entries)
		}
		n.dur = n.vol.clone()
	}
	t.pending = nil
}

// durable is the tree a power cut leaves: the inodes the durable entries
// reach from the root, as they were made durable.
func (t *tree) durable() *tree {
	d := &tree{inodes: map[uint64]*inode{}, nextIno: t.nextIno}
	var walk func(ino uint64)
	walk = func(ino uint64) {
		if n, ok := d.inodes[ino]; ok {
			n.links++
			return
		}
		old := t.inodes[ino]
		n := &inode{ino: ino, vol: old.dur.clone(), dur: old.dur.clone(), links: 1}
		d.inodes[ino] = n
		if !n.vol.isDir() {
			return
		}
		n.entries, n.durEntries = maps.Clone(old.durEntries), maps.Clone(old.durEntries)
		for _, name := range slices.Sorted(maps.Keys(n.entries)) {
			child := n.entries[name]
			if c, seen := d.inodes[child]; seen && c.vol.isDir() {
				// A directory under two names cannot come of the
				// operations log (renames are atomic); keep the first.
				delete(n.entries, name)
				delete(n.durEntries, name)
				continue
			}
			walk(child)
		}
	}
	walk(rootIno)
	return d
}

// paths lists the served names of ino relative to the root (for fault
// injection by name).
func (t *tree) paths(ino uint64) []string {
	var out []string
	var walk func(dir uint64, prefix string)
	walk = func(dir uint64, prefix string) {
		for name, child := range t.inodes[dir].entries {
			p := path.Join(prefix, name)
			if child == ino {
				out = append(out, p)
			}
			if t.inodes[child].vol.isDir() {
				walk(child, p)
			}
		}
	}
	if ino == rootIno {
		return []string{"."}
	}
	walk(rootIno, "")
	return out
}
