package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// A directory's size on the host grows with its entries (ext4: a block at a
// time, as its hash tree splits) and, on most file systems, never shrinks;
// on tmpfs it counts them. The view keeps a changed directory's entries in
// memory, so the backing object's size is the host directory's as it was
// (or an empty staged directory's). To show what the host file system
// would, the names of such a directory are mirrored, when it is first
// stat'ed, into a shadow directory in the staging area on its mount — the
// same file system, so the same growth — as hard links to one empty file:
// the host names, then those the transaction changed in the order it first
// changed them; later changes are replayed at the next stat. The shadow is
// never part of the journal; it goes with the staging area.
//
// A host directory's layout depends on the order its names were made in,
// which the shadow cannot repeat: filled in listing (hash) order, a large
// shadow comes out larger than its host directory (/usr/share/man/man1:
// 1.9 MB against 1.4 MB). So a host directory shows its own size plus what
// the transaction's changes added to the shadow (its growth); only a
// directory the transaction made, and any directory on tmpfs, whose size
// counts entries, show the shadow's size.
//
// Removing names never grows a directory, so a host directory (not on
// tmpfs) that has only lost names shows its own size: its shadow is
// deferred until the view holds a name the host directory does not
// (dpkg -r's removal of a page from man1 links no 17,848 names, nor
// unlinks them at commit). The shadow then made goes through the same
// steps the one made at the first stat would have: the host names read
// then, the names removed since, in the order they were, then the
// changes of this stat.

// maxShadowNames bounds a shadow: a larger directory shows the backing
// object's size, rather than costing a link per name at its first stat.
const maxShadowNames = 1 << 16

// dirShadow follows the names of one directory whose entries the
// transaction changed.
type dirShadow struct {
	// log holds the names changed since the last sync, in the order they
	// were first changed; logged is its set.
	log    []string
	logged map[string]bool
	// area, dir, fd and names are the shadow directory, once made: its
	// area and name there, an O_PATH descriptor on it, the names it holds.
	area  *area
	dir   string
	fd    int
	names map[string]bool
	// target is the empty file the names link to (a new one when it has
	// as many links as the file system allows).
	target string
	// broken: the shadow could not be kept (no space, say); the backing
	// object's size is shown.
	broken bool
	// base is the shadow's size holding only the host names, before the
	// transaction's changes.
	base int64
	// countsEntries: the shadow is on tmpfs, whose directory sizes count
	// entries, so a host directory there shows the shadow's size too.
	countsEntries bool

	// deferred: the shadow of a host directory is not made yet, as the
	// view holds none of its names but host ones. host are the host
	// names it will start from, as read at the first stat, and hostNames
	// their set; gone are the host names the view removed since, in the
	// order the shadow would have unlinked them, goneSet their set.
	deferred  bool
	host      []Dirent
	hostNames map[string]bool
	gone      []string
	goneSet   map[string]bool
}

// noteEntryLocked records that name in directory dir changed.
//
// Preconditions: v.mu held.
func (v *Tx) noteEntryLocked(dir *Node, name string) {
	s := v.dirShadows[dir]
	if s == nil {
		if v.dirShadows == nil {
			v.dirShadows = map[*Node]*dirShadow{}
		}
		s = &dirShadow{fd: -1}
		v.dirShadows[dir] = s
	}
	if s.broken {
		return
	}
	if s.logged == nil {
		s.logged = map[string]bool{}
	}
	if !s.logged[name] {
		s.logged[name] = true
		s.log = append(s.log, name)
	}
}

// dirSizeLocked sets st's size and blocks for directory n, whose other
// attributes st holds, to what the host file system would show once it
// held n's entries in the view. It leaves st alone for a directory whose
// entries did not change, and for a host directory that only lost names.
//
// Preconditions: v.mu held; n is a directory.
func (v *Tx) dirSizeLocked(n *Node, st *unix.Stat_t) {
	s := v.dirShadows[n]
	if s == nil || s.broken || n.removed {
		return
	}
	if err := v.syncShadowLocked(n, s); err != nil {
		s.broken = true
		s.log, s.logged = nil, nil
		s.host, s.hostNames, s.gone, s.goneSet = nil, nil, nil, nil
		return
	}
	if s.deferred {
		return // no growth: only host names removed
	}
	var sst unix.Stat_t
	if unix.Fstat(s.fd, &sst) != nil {
		return
	}
	switch {
	case n.host == (FileID{}) || s.countsEntries:
		st.Size, st.Blocks = sst.Size, sst.Blocks
	case sst.Size > s.base:
		// It does not shrink: only growth shows.
		grown := sst.Size - s.base
		st.Size += grown
		st.Blocks += grown / 512
	}
}

// syncShadowLocked makes s's shadow directory hold n's names in the view,
// or notes the host names removed while it is deferred.
//
// Preconditions: v.mu held.
func (v *Tx) syncShadowLocked(n *Node, s *dirShadow) error {
	if s.area == nil && !s.deferred {
		if err := v.startShadowLocked(n, s); err != nil {
			return err
		}
	}
	if s.deferred {
		if !s.gainedLocked(n) {
			for _, name := range s.log {
				if n.entries[name] == nil && s.hostNames[name] && !s.goneSet[name] {
					s.gone = append(s.gone, name)
					s.goneSet[name] = true
				}
			}
			s.log, s.logged = nil, nil
			return nil
		}
		// The steps the shadow made at the first stat would have gone
		// through since.
		if err := v.makeShadowLocked(n, s, s.host); err != nil {
			return err
		}
		for _, name := range s.gone {
			if err := unix.Unlinkat(s.fd, name, 0); err != nil {
				return err
			}
			delete(s.names, name)
		}
		s.deferred = false
		s.host, s.hostNames, s.gone, s.goneSet = nil, nil, nil, nil
	}
	for _, name := range s.log {
		switch inView := n.entries[name] != nil; {
		case inView && !s.names[name]:
			if err := v.shadowAddLocked(s, name); err != nil {
				return err
			}
		case !inView && s.names[name]:
			if err := unix.Unlinkat(s.fd, name, 0); err != nil {
				return err
			}
			delete(s.names, name)
		}
	}
	// New ones, not cleared: clearing a map costs its capacity.
	s.log, s.logged = nil, nil
	return nil
}

// startShadowLocked begins s's shadow at n's first stat: deferred for a
// host directory not on tmpfs, with the host names read now; otherwise
// made at once.
//
// Preconditions: v.mu held; s neither made nor deferred.
func (v *Tx) startShadowLocked(n *Node, s *dirShadow) error {
	// Only on a mount where the transaction already stages: a stat never
	// makes a staging area.
	if v.areas[v.mountOfLocked(n)] == nil {
		return unix.EXDEV
	}
	if n.hostFd < 0 || n.opaque {
		return v.makeShadowLocked(n, s, nil)
	}
	host := n.hostList
	if host == nil {
		// Read without recording it: a stat is no listing.
		var err error
		if host, err = readHostDirAll(n.hostFd); err != nil {
			return err
		}
	}
	if len(host) > maxShadowNames {
		return unix.EFBIG
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(n.hostFd, &sfs); err != nil {
		return err
	}
	if n.host == (FileID{}) || sfs.Type == unix.TMPFS_MAGIC {
		return v.makeShadowLocked(n, s, host)
	}
	s.deferred, s.host = true, host
	s.hostNames = make(map[string]bool, len(host))
	for _, e := range host {
		s.hostNames[e.Name] = true
	}
	s.goneSet = map[string]bool{}
	return nil
}

// gainedLocked reports whether a name changed since the last sync of
// deferred shadow s is in the view and no host name the shadow would
// hold: one the host directory does not have, or had and the view
// removed.
//
// Preconditions: v.mu held; s deferred.
func (s *dirShadow) gainedLocked(n *Node) bool {
	for _, name := range s.log {
		if n.entries[name] != nil && (!s.hostNames[name] || s.goneSet[name]) {
			return true
		}
	}
	return false
}

// makeShadowLocked makes s's shadow directory in the staging area of n's
// mount, holding the host names host (in their order, "." and ".."
// left out), and takes its base size.
//
// Preconditions: v.mu held; n's mount has a staging area.
func (v *Tx) makeShadowLocked(n *Node, s *dirShadow, host []Dirent) error {
	a := v.areas[v.mountOfLocked(n)]
	name := "dirsize-" + v.newStagedNameLocked()
	if err := unix.Mkdirat(a.fd, name, 0o700); err != nil {
		return err
	}
	s.area, s.dir = a, name // removed with the rest, even if unfinished
	fd, err := unix.Openat(a.fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	s.area, s.dir, s.fd, s.names = a, name, fd, map[string]bool{}
	// All of them, changed or not: the changes, all in s.log (and
	// s.gone), are replayed on top, after base is taken.
	for _, e := range host {
		if e.Name != "." && e.Name != ".." {
			if err := v.shadowAddLocked(s, e.Name); err != nil {
				return err
			}
		}
	}
	var sst unix.Stat_t
	var sfs unix.Statfs_t
	if err := unix.Fstat(s.fd, &sst); err != nil {
		return err
	}
	if err := unix.Fstatfs(s.fd, &sfs); err != nil {
		return err
	}
	s.base, s.countsEntries = sst.Size, sfs.Type == unix.TMPFS_MAGIC
	return nil
}

// shadowAddLocked adds name to s's shadow directory.
//
// Preconditions: v.mu held.
func (v *Tx) shadowAddLocked(s *dirShadow, name string) error {
	if len(s.names) >= maxShadowNames {
		return unix.EFBIG
	}
	for {
		if s.target == "" {
			t := "dirsize-" + v.newStagedNameLocked()
			fd, err := unix.Openat(s.area.fd, t, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			if err != nil {
				return err
			}
			unix.Close(fd)
			s.target = t
		}
		err := unix.Linkat(s.area.fd, s.target, s.fd, name, 0)
		if err == unix.EMLINK {
			s.target = ""
			continue
		}
		if err == nil {
			s.names[name] = true
		}
		return err
	}
}

// DropDirShadows removes the shadow directories in the background, and
// returns a function that waits until they are gone. It is for the end of
// the transaction, once no process is in the view (Transaction.Commit):
// the shadows are no part of the journal and serve only stats, and a stat
// after it shows a changed directory's backing size. What cannot be
// removed is left to the staging area's removal, which reports it.
func (v *Tx) DropDirShadows() (wait func()) {
	v.mu.Lock()
	var dirs []string
	for _, s := range v.dirShadows {
		if s.area != nil && s.dir != "" {
			dirs = append(dirs, s.area.pathOf(s.dir))
		}
		if s.fd >= 0 {
			unix.Close(s.fd)
			s.fd = -1
		}
		s.broken = true
		s.log, s.logged, s.names = nil, nil, nil
		s.host, s.hostNames, s.gone, s.goneSet = nil, nil, nil, nil
	}
	v.mu.Unlock()
	if len(dirs) == 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}()
	return func() { <-done }
}
