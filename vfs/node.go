package vfs

import (
	"golang.org/x/sys/unix"
)

// FileID identifies a backing object by device and inode.
type FileID struct{ Dev, Ino uint64 }

func idOf(st *unix.Stat_t) FileID { return FileID{Dev: st.Dev, Ino: st.Ino} }

// isHostObject reports whether st describes n's host original. (dev, ino)
// alone is not enough: a file system reuses a freed inode number at once, so
// a name unlinked and recreated on the host (a regular file swapped for a
// symlink, say) can come back with the same pair. The type tells those
// apart; a same-type reuse changes ctime, which validation at commit
// catches.
func (n *Node) isHostObject(st *unix.Stat_t) bool {
	return idOf(st) == n.host && st.Mode&unix.S_IFMT == n.typ
}

// Node is an object in a transaction's view: loosely Linux's inode, except
// that its data lives in a backing object — the host original (never opened
// writable) or a staged object in the staging area — and a directory keeps
// the entries the transaction changed in memory, over the host directory's
// own.
//
// Fields are guarded by Tx.mu.
type Node struct {
	typ uint32 // S_IFMT

	// host is the host original's identity; zero for objects the
	// transaction created.
	host FileID
	// hostParent and hostName are where the host original was found; with
	// hostPath they name it on the host, which is unchanged until commit.
	hostParent *Node
	hostName   string
	hostPath   string
	// hostFd is an O_PATH descriptor on a host directory (-1 otherwise).
	hostFd int
	// mnt identifies the mount of a host directory, once mntSet.
	mnt    uint64
	mntSet bool
	// passthrough marks a host directory whose subtree is not
	// transactional (/proc, /sys, /dev, --exclude).
	passthrough bool
	// areaChild marks a mount root in which the transaction made a
	// staging area: its link count in the view leaves the area out, as
	// its listings do.
	areaChild bool

	// staged is the name of the staged backing object in its staging
	// area ("" if none), and stagedID its identity. area is the staging
	// area that holds it, or an O_TMPFILE object: the one on the mount of
	// the paths it shadows.
	staged   string
	stagedID FileID
	area     *area
	// replayIno is the inode the object has at this point of the
	// journal's replay: the host original's until a copy-up placed the
	// staged object, then the staged object's.
	replayIno uint64
	// inPlace: commit writes this object's changes into the host original
	// (directories, and files with other hard links outside the view)
	// instead of replacing it, so metadata changes are journaled.
	inPlace bool
	// dataChanged: the staged copy of a host original was opened for
	// writing or truncated, so its contents may differ from the
	// original's (its write set has the data granule, not only the
	// attributes).
	dataChanged bool
	// copyMark is what the staged copy of a host regular file looked like
	// right after its copy-up, so that the commit can tell a copy nothing
	// changed (unchangedCopiesLocked).
	copyMark *copyMark
	sameData *sameData
	// inodeAttrsChanged: an attribute ioctl (chattr's flags, fsxattr,
	// generation) changed the staged copy, which alone carries it.
	inodeAttrsChanged bool

	// parent and name are a directory's place in the view (directories
	// have exactly one name).
	parent *Node
	name   string
	// entries are a directory's changed entries: a nil value is a
	// whiteout. When opaque, they are all its entries (a directory
	// created in the transaction never shows an old directory's children).
	entries map[string]*Node
	opaque  bool
	// changed is the time of the last change to a directory's entries,
	// its view mtime and ctime.
	changed *unix.Timespec
	// ctime is the time the view last changed the inode itself without
	// writing its backing object (link count, rename, chown to -1, -1), as
	// Linux moves the ctime then: the view's ctime while later than the
	// backing object's own (a later write of a staged copy moves that).
	ctime *unix.Timespec
	// stamped is the mtime a staged object had when the view last set or
	// saw set its times (Tx.StampTimes): a different mtime is the host
	// kernel's, from a write through a descriptor.
	stamped *unix.Timespec
	// vino is the virtual inode number of an object the transaction
	// created (Tx.VirtualInodes); host originals have theirs in Tx.vinos.
	vino uint64

	// hostList caches a host directory's entries, as first read (the
	// transaction's snapshot; validation checks it is still so).
	hostList []Dirent
	// cookies are the listing positions given to entries the transaction
	// made in this directory (see Tx.Listing).
	cookies map[string]uint64

	// lookups caches host lookups in a directory (nil: absent). The
	// transaction sees each host name as it first read it; validation at
	// commit checks that it still is (optimistic concurrency).
	lookups map[string]*Node
	// attr caches the permission attributes of a host original, read with
	// its entry, or of a staged directory (attrsCacheable).
	attr    attrs
	attrSet bool
	// fastNoted: a walk offered this directory to the fast-lookup agent
	// (noteFastDirLocked).
	fastNoted bool

	// locDir and locName are one name of a non-directory in the view (the
	// first it was found or made by, then where a rename moved it): its
	// mount, and its /proc/self/fd path. The journal names it by names.
	locDir  *Node
	locName string
	// names are the names the view has seen n by (a non-directory may
	// have several), for the journal to name it by one that still exists
	// (liveNameLocked); names no longer n's are pruned as others come.
	names []nameRef
	// grave is where the journal last removed the last name the view knew
	// of a non-directory that still has names elsewhere on the host: ops
	// on it go before that removal (see placeLocked).
	grave *grave
	// token names the file in the home staging area whose descriptors
	// stand for this object where an O_PATH descriptor would
	// (Tx.pathTokenLocked).
	token string
	// anon marks an O_TMPFILE object that has no name yet; anonFd is an
	// O_PATH descriptor on it (it has no path in its staging area).
	anon   bool
	anonFd int
	// removed marks a directory removed from the view; removedFrom is the
	// directory it was removed from (for its " (deleted)" path).
	removed     bool
	removedFrom *Node
	// tmpDir is the directory an O_TMPFILE object was made in.
	tmpDir *Node

	// nlink is the link count in the view, once links were made or removed.
	nlink    uint64
	nlinkSet bool
	// extraLinks are the extra names of a staged object in the staging
	// area that give it the view's link count (stagedLinksLocked).
	extraLinks int
}

func (n *Node) isDir() bool { return n.typ == unix.S_IFDIR }

// attrsCacheable reports whether n's permission attributes may be kept in
// n.attr between calls. A host original's are those the transaction first
// read (validation checks the host still has them). A staged directory's
// change only by the view's own attribute calls, which drop them (modify):
// walks check every directory on a path, so this saves two system calls per
// component of a directory the transaction changed, such as man1 under
// dpkg's man-db trigger. A staged file's can change behind the view: a
// write or truncate through a descriptor clears its set-ID bits.
func (n *Node) attrsCacheable() bool { return !n.anon && (n.staged == "" || n.isDir()) }

// keepsIdentity reports whether n is a host directory, FIFO or device:
// those stay themselves in the view (descriptors on them are on the host
// object) and a staged copy of one only carries attribute changes.
func (n *Node) keepsIdentity() bool {
	if n.host == (FileID{}) {
		return false
	}
	switch n.typ {
	case unix.S_IFDIR:
		return n.hostFd >= 0
	case unix.S_IFIFO, unix.S_IFCHR, unix.S_IFBLK:
		return n.hostParent != nil
	}
	return false
}

// viewIno is the inode number stat shows for n: a host directory, FIFO or
// device keeps its own, any other staged object shows its staged object's.
func (n *Node) viewIno() uint64 {
	if n.anon || n.staged != "" && !n.keepsIdentity() {
		return n.stagedID.Ino
	}
	if n.host != (FileID{}) {
		return n.host.Ino
	}
	return n.replayIno
}

// viewPathLocked is the node's path in the view, for the journal: the
// host path the object will have at this point of the replay.
//
// Preconditions: Tx.mu held; n is a directory, or parent+name are given.
func (n *Node) viewPathLocked() string {
	if n.parent == nil {
		return "/"
	}
	p := n.parent.viewPathLocked()
	if p == "/" {
		return "/" + n.name
	}
	return p + "/" + n.name
}

func childPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
