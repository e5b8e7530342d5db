package fastlookup

import (
	"strings"
	"sync/atomic"
)

// The agent's decision (fastlookup.h, steps 1, 2 and 5), in Go, on the
// shared memory alone: the reference the agent's C follows, and what the
// tests of the supervisor's side stand in for the agent with.

// Decide reports whether the agent may make a lookup of path natively, and
// the generation it read first (the record's). path must be absolute and
// clean, as the agent checks lexically before this.
func (t *Tree) Decide(path string) (gen uint64, ok bool) {
	gen = atomic.LoadUint64(&t.t.generation) // acquire: before the sets
	if atomic.LoadUint32(&t.t.enabled) == 0 || !cleanAbsolute(path) || len(path) >= PathMax || path == "/" {
		return gen, false
	}
	// Every proper prefix, "/" included, as a subtree.
	for i := 0; i < len(path); i++ {
		if path[i] != '/' {
			continue
		}
		prefix := path[:i]
		if i == 0 {
			prefix = "/"
		}
		if t.sharedKind(PathKey(prefix)) == ChangedSubtree {
			return gen, false
		}
	}
	if t.sharedKind(PathKey(path)) != 0 {
		return gen, false
	}
	parent := path[:strings.LastIndexByte(path, '/')]
	if parent == "" {
		parent = "/"
	}
	if _, _, fast := t.sharedFastDir(PathKey(parent)); !fast {
		return gen, false
	}
	return gen, true
}

// DecideAt is Decide for a lookup of name relative to a directory
// descriptor whose identity (fstat) is (dev, ino): the identity must be a
// fast directory's, and the path its prefix and name make must not be in
// the changed set. name must be one clean component.
func (t *Tree) DecideAt(dev, ino uint64, name string) (gen uint64, ok bool) {
	gen = atomic.LoadUint64(&t.t.generation) // acquire: before the sets
	if atomic.LoadUint32(&t.t.enabled) == 0 || !cleanName(name) {
		return gen, false
	}
	prefix, fast := t.sharedDirID(dev, ino)
	if !fast || t.sharedKind(key(hashOn(prefix, name))) != 0 {
		return gen, false
	}
	return gen, true
}

// sharedDirID is the prefix of the fast directory (dev, ino) in the shared
// dirids table.
func (t *Tree) sharedDirID(dev, ino uint64) (prefix uint64, ok bool) {
	key := ObjectKey(dev, ino)
	for i := key & (FastDirsN - 1); ; i = (i + 1) & (FastDirsN - 1) {
		e := &t.t.dirIDs[i]
		switch atomic.LoadUint64(&e.key) {
		case key:
			return e.prefix, true
		case KeyEmpty:
			return 0, false
		}
	}
}

// cleanName reports whether name is one path component: not empty, ".",
// or "..", and without a slash.
func cleanName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}

// ObjectChanged reports whether the agent finds (dev, ino) in the changed
// objects: it then forwards the call it made natively.
func (t *Tree) ObjectChanged(dev, ino uint64) bool {
	key := ObjectKey(dev, ino)
	for i := key & (ObjectsN - 1); ; i = (i + 1) & (ObjectsN - 1) {
		switch atomic.LoadUint64(&t.t.objects[i]) {
		case key:
			return true
		case KeyEmpty:
			return false
		}
	}
}

// NativeFstat reports whether the agent answers the fstat of a descriptor
// of (dev, ino), a changed object, natively (step 5): an own object in the
// natives table.
func (t *Tree) NativeFstat(dev, ino uint64) bool {
	key := ObjectKey(dev, ino)
	for i := key & (NativesN - 1); ; i = (i + 1) & (NativesN - 1) {
		e := &t.t.natives[i]
		switch atomic.LoadUint64(&e.key) {
		case key:
			if e.dev == dev && e.ino == ino {
				return true
			}
		case KeyEmpty:
			return false
		}
	}
}

// sharedKind is the kind of the changed-set entry for key (0: none).
func (t *Tree) sharedKind(key uint64) Kind {
	for i := key & (ChangedN - 1); ; i = (i + 1) & (ChangedN - 1) {
		e := &t.t.changed[i]
		switch atomic.LoadUint64(&e.key) {
		case key:
			return Kind(atomic.LoadUint64(&e.kind))
		case KeyEmpty:
			return 0
		}
	}
}

// sharedFastDir is the fast directory of key in the shared table.
func (t *Tree) sharedFastDir(key uint64) (dev, ino uint64, ok bool) {
	for i := key & (FastDirsN - 1); ; i = (i + 1) & (FastDirsN - 1) {
		e := &t.t.fastDirs[i]
		switch atomic.LoadUint64(&e.key) {
		case key:
			return e.dev, e.ino, true
		case KeyEmpty:
			return 0, 0, false
		}
	}
}

// maxLinks is the agent's TX_LINKS: the symlinks it replaces in one path.
const maxLinks = 8

// Resolve is the agent's replacement of the symlinks the view published
// (tx_begin): every name in the middle of clean absolute path p that is
// one, and its last component when the call follows it, is replaced by
// the link's target, from the start, until none is left; ok false (the
// agent forwards) if a link replaced is in the changed set or under a
// changed subtree, or after maxLinks of them. The path it returns is the
// one Decide then checks and the record carries.
func (t *Tree) Resolve(p string, follow bool) (resolved string, ok bool) {
	for links := 0; ; {
		replaced := false
		for end := 1; end <= len(p); end++ {
			if end < len(p) && p[end] != '/' {
				continue
			}
			last := end == len(p)
			if last && !follow {
				break
			}
			target, found := t.sharedLink(PathKey(p[:end]))
			if !found {
				continue
			}
			links++
			if links > maxLinks || t.changedOnTheWay(p[:end]) {
				return "", false
			}
			rest := p[end:]
			if target == "/" && rest != "" {
				target = ""
			}
			p, replaced = target+rest, true
			break
		}
		if !replaced {
			return p, true
		}
	}
}

// changedOnTheWay reports whether clean absolute path p is in the changed
// set, or a proper prefix of it is a changed subtree.
func (t *Tree) changedOnTheWay(p string) bool {
	for i := 1; i < len(p); i++ {
		if p[i] == '/' && t.sharedKind(PathKey(p[:i])) == ChangedSubtree {
			return true
		}
	}
	return t.sharedKind(PathKey("/")) == ChangedSubtree || t.sharedKind(PathKey(p)) != 0
}

// sharedLink is the target of the symlink of key in the shared links
// table.
func (t *Tree) sharedLink(key uint64) (string, bool) {
	for i := key & (LinksN - 1); ; i = (i + 1) & (LinksN - 1) {
		e := &t.t.links[i]
		switch atomic.LoadUint64(&e.key) {
		case key:
			n := 0
			for n < len(e.target) && e.target[n] != 0 {
				n++
			}
			return string(e.target[:n]), true
		case KeyEmpty:
			return "", false
		}
	}
}
