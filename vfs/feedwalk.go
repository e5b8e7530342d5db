package vfs

import (
	"strings"
)

// The walk of the feed (feedLocked): a record's path walked in the view
// with the supervisor's credentials. Most consecutive records share their
// directory (mandb stats every page of /usr/share/man/man1 in turn), and a
// walk from the root costs a map lookup, a permission check and a string
// split per component, so the directory a record's parent path leads to is
// kept, and the next record in it walks only its last component.
//
// That walk finds what a walk from the root would, and records what it
// would:
//   - the directories on the way were recorded (the entries looked up,
//     fast directories offered) by the walk that filled the cache, and a
//     second walk through them would record nothing new: the read set
//     keeps a path's first record and only ever adds, the view's lookups
//     and permission attributes are cached in the nodes;
//   - with the supervisor's credentials (rootCred) no search permission is
//     ever refused, so a directory's attributes decide nothing on the way;
//   - what a walk to the parent finds changes only with the view's
//     entries (a rename, a removal, a new directory or symlink over the
//     name), each of which moves the view's generation (Tx.gen): the cache
//     holds only while it has not moved. Not the tree's generation, which
//     moves only at the first change of a path: a directory renamed back
//     and forth, reached through a symlink whose path the changed set does
//     not name, would keep a stale parent.
//
// The parent is walked with its final symlink followed, as a walk of the
// whole path follows it in the middle; a path with a trailing slash, an
// empty component before its last one, or a last component "." or "..",
// and one whose parent walk fails or leads into a passthrough subtree, is
// walked from the root, so that it fails, or is handed to the host, as
// before.

// maxFeedDirs bounds the directories kept for the feed; a full cache is
// emptied (records come in runs of one directory, rarely many at a time).
const maxFeedDirs = 64

// feedWalkLocked resolves path, absolute, as walkLocked from the root with
// rootCred and the final symlink not followed would, through the directory
// its parent path led to before if the view's entries did not change
// since.
//
// Preconditions: v.mu held.
func (v *Tx) feedWalkLocked(path string) (resolved, error) {
	c := &Caller{Cred: rootCred}
	i := strings.LastIndexByte(path, '/')
	if i < 0 || path[0] != '/' {
		return v.walkLocked(c, v.root, path, false /* followFinal */, &walkState{})
	}
	parent, name := path[:i], path[i+1:]
	if i == 0 {
		parent = "/"
	}
	if name == "" || name == "." || name == ".." || strings.HasSuffix(path[:i], "/") {
		return v.walkLocked(c, v.root, path, false /* followFinal */, &walkState{})
	}
	if v.feedDirsGen != v.gen || len(v.feedDirs) >= maxFeedDirs {
		clear(v.feedDirs)
		v.feedDirsGen = v.gen
	}
	dir := v.feedDirs[parent]
	if dir == nil || dir.removed {
		r, err := v.walkLocked(c, v.root, parent, true /* followFinal */, &walkState{})
		if err != nil || v.doomed != nil || r.pass || r.node == nil || !r.node.isDir() || r.node.passthrough {
			return v.walkLocked(c, v.root, path, false /* followFinal */, &walkState{})
		}
		dir = r.node
		if v.feedDirs == nil {
			v.feedDirs = map[string]*Node{}
		}
		v.feedDirs[parent] = dir
	}
	return v.walkLocked(c, dir, name, false /* followFinal */, &walkState{})
}
