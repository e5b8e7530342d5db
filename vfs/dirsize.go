package vfs

import (
	"errors"
	"os"
	"strconv"
	"sync/atomic"

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
//
// Making a large shadow costs a link per host name (17,850 for man1),
// and the stat that first needs it would wait for them all: so when the
// view first gains a name in a host directory of at least
// backgroundShadowNames names (a create, link, rename or mkdir into it:
// what gainedLocked would see), its shadow is built in a goroutine,
// without the view's lock, and the first stat only waits for what is
// left of it. The build makes the same shadow the stat would have made:
// the host names, in their order, then base; the stat replays on top of
// it the names removed since, in their order, then the changes. Only the
// moment the host names are read moves, from the first stat to the first
// gain: they are the host directory's names, which the transaction did
// not change, and read either way without recording them; they differ
// only if another process changed the host directory in between, and
// then the size is an estimate of the growth either way (the deferred
// shadow above reads them at one stat and links them at a later one).
// Smaller directories keep the shadow made at their first stat: cheap,
// and most of them are never stat'ed.

// maxShadowNames bounds a shadow: a larger directory shows the backing
// object's size, rather than costing a link per name at its first stat.
const maxShadowNames = 1 << 16

// backgroundShadowNames is the fewest host names for which a directory's
// shadow is built in the background from its first gain, rather than at
// its first stat. A variable only so tests can compare with the shadow
// made at the first stat.
var backgroundShadowNames = 1 << 10

// errBuildCanceled ends a background build the view no longer needs.
var errBuildCanceled = errors.New("shadow build canceled")

// testHookShadowBuild, when set, is called by a background build once it
// has its host names and before it makes anything; an error fails the
// build. Tests use it to hold a build in flight or to make it fail.
var testHookShadowBuild func() error

// shadowFiles is a made shadow directory: what a background build fills
// without the view's lock, and a stat keeps in step under it.
type shadowFiles struct {
	// dir is the shadow directory's name in its staging area, fd an
	// O_PATH descriptor on it, names the names it holds.
	dir   string
	fd    int
	names map[string]bool
	// target is the empty file the names link to (a new one, dir with
	// the suffix "-t" and targetN, when it has as many links as the file
	// system allows).
	target  string
	targetN int
	// base is the shadow's size holding only the host names, before the
	// transaction's changes.
	base int64
	// countsEntries: the shadow is on tmpfs, whose directory sizes count
	// entries, so a host directory there shows the shadow's size too.
	countsEntries bool
}

// shadowBuild is a shadow being made in the background. Until done is
// closed the goroutine owns files, its descriptors and its directory;
// after, files and err are the result.
type shadowBuild struct {
	area   *area
	cancel atomic.Bool
	done   chan struct{}
	files  shadowFiles
	// small: the host directory has fewer than backgroundShadowNames
	// names; nothing was made, and the first stat makes the shadow.
	small bool
	err   error
}

// dirShadow follows the names of one directory whose entries the
// transaction changed.
type dirShadow struct {
	// log holds the names changed since the last sync, in the order they
	// were first changed; logged is its set.
	log    []string
	logged map[string]bool
	// area is the staging area of the shadow directory, once made (or
	// begun): shadowFiles is the directory.
	area *area
	shadowFiles
	// build is the shadow's background build in flight, adopted at the
	// next stat; buildTried: one was started (or ruled out) already.
	build      *shadowBuild
	buildTried bool
	// broken: the shadow could not be kept (no space, say); the backing
	// object's size is shown.
	broken bool

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
		s = &dirShadow{shadowFiles: shadowFiles{fd: -1}}
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
	if s.area == nil && !s.buildTried {
		v.startBuildLocked(dir, s, name)
	}
}

// startBuildLocked starts building s's shadow in the background if name,
// just changed in host directory n, is the view's first gain there (a
// name in the view the host directory does not hold, or held and the
// view removed) and n holds at least backgroundShadowNames host names.
//
// Preconditions: v.mu held; s not made, no build started.
func (v *Tx) startBuildLocked(n *Node, s *dirShadow, name string) {
	if n.entries[name] == nil || n.removed || n.hostFd < 0 || n.opaque || n.host == (FileID{}) {
		return
	}
	a := v.areas[v.mountOfLocked(n)]
	if a == nil {
		return // a stat shows the size from before there
	}
	host := n.hostList
	if s.deferred {
		if s.hostNames[name] && !s.goneSet[name] {
			return
		}
		host = s.host
	} else {
		var st unix.Stat_t
		if err := unix.Fstatat(n.hostFd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != unix.ENOENT {
			return // a host name, replaced: no gain
		}
	}
	s.buildTried = true
	if host != nil && len(host) < backgroundShadowNames {
		return
	}
	// The build's own descriptors: the view's may close before it ends.
	areaFd, err := unix.FcntlInt(uintptr(a.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	hostFd := -1
	if host == nil {
		if hostFd, err = unix.FcntlInt(uintptr(n.hostFd), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			unix.Close(areaFd)
			return
		}
	}
	b := &shadowBuild{area: a, done: make(chan struct{})}
	b.files = shadowFiles{dir: "dirsize-" + v.newStagedNameLocked(), fd: -1}
	s.build = b
	go b.run(areaFd, hostFd, host)
}

// run makes b's shadow directory in the area areaFd is on, holding the
// host names host, or those read from hostFd when host is nil (not
// recorded: a stat is no listing). It closes areaFd and hostFd.
func (b *shadowBuild) run(areaFd, hostFd int, host []Dirent) {
	defer close(b.done)
	defer unix.Close(areaFd)
	if host == nil {
		host, b.err = readHostDirAll(hostFd)
		unix.Close(hostFd)
		if b.err != nil {
			return
		}
		if len(host) < backgroundShadowNames {
			b.small = true
			return
		}
	}
	if len(host) > maxShadowNames {
		b.err = unix.EFBIG
		return
	}
	if hook := testHookShadowBuild; hook != nil {
		if b.err = hook(); b.err != nil {
			return
		}
	}
	b.err = b.files.make(areaFd, host, &b.cancel)
}

// adoptBuildLocked waits for s's build in flight to end and takes its
// shadow as s's, made as the first stat would have made it.
//
// Preconditions: v.mu held; s.build set.
func (s *dirShadow) adoptBuildLocked() error {
	b := s.build
	s.build = nil
	<-b.done
	if b.small {
		return nil
	}
	s.area = b.area // removed with the rest, even if unfinished
	s.shadowFiles = b.files
	return b.err
}

// stopBuildLocked cancels s's build in flight and returns it, for the
// caller to wait for; nil if there is none.
//
// Preconditions: v.mu held.
func (s *dirShadow) stopBuildLocked() *shadowBuild {
	b := s.build
	if b != nil {
		b.cancel.Store(true)
		s.build = nil
	}
	return b
}

// release waits for stopped build b to end and closes its descriptor; it
// returns the host path of its directory, for the caller to remove.
func (b *shadowBuild) release() string {
	<-b.done
	if b.files.fd >= 0 {
		unix.Close(b.files.fd)
	}
	return b.area.pathOf(b.files.dir)
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
	if s.build != nil {
		if err := s.adoptBuildLocked(); err != nil {
			return err
		}
		if s.area != nil {
			if err := s.madeLocked(); err != nil {
				return err
			}
		}
	}
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
		if err := s.madeLocked(); err != nil {
			return err
		}
	}
	for _, name := range s.log {
		switch inView := n.entries[name] != nil; {
		case inView && !s.names[name]:
			if err := s.add(s.area.fd, name); err != nil {
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

// madeLocked brings the shadow just made with the host names of a
// deferred s through the steps it would have gone through since: the
// host names removed, in their order.
//
// Preconditions: v.mu held; s's shadow made.
func (s *dirShadow) madeLocked() error {
	for _, name := range s.gone {
		if err := unix.Unlinkat(s.fd, name, 0); err != nil {
			return err
		}
		delete(s.names, name)
	}
	s.deferred = false
	s.host, s.hostNames, s.gone, s.goneSet = nil, nil, nil, nil
	return nil
}

// makeShadowLocked makes s's shadow directory in the staging area of n's
// mount, holding the host names host, and takes its base size.
//
// Preconditions: v.mu held; n's mount has a staging area.
func (v *Tx) makeShadowLocked(n *Node, s *dirShadow, host []Dirent) error {
	a := v.areas[v.mountOfLocked(n)]
	s.area, s.dir = a, "dirsize-"+v.newStagedNameLocked() // removed with the rest, even if unfinished
	return s.make(a.fd, host, nil)
}

// make makes shadow directory f.dir in the staging area areaFd is on,
// holding the host names host (in their order, "." and ".." left out),
// and takes its base size; it stops with errBuildCanceled once cancel
// (if not nil) is set.
func (f *shadowFiles) make(areaFd int, host []Dirent, cancel *atomic.Bool) error {
	if err := unix.Mkdirat(areaFd, f.dir, 0o700); err != nil {
		return err
	}
	fd, err := unix.Openat(areaFd, f.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f.fd, f.names = fd, make(map[string]bool, len(host))
	// All of them, changed or not: the changes, all in the log (and
	// gone), are replayed on top, after base is taken.
	for _, e := range host {
		if cancel != nil && cancel.Load() {
			return errBuildCanceled
		}
		if e.Name != "." && e.Name != ".." {
			if err := f.add(areaFd, e.Name); err != nil {
				return err
			}
		}
	}
	var sst unix.Stat_t
	var sfs unix.Statfs_t
	if err := unix.Fstat(f.fd, &sst); err != nil {
		return err
	}
	if err := unix.Fstatfs(f.fd, &sfs); err != nil {
		return err
	}
	f.base, f.countsEntries = sst.Size, sfs.Type == unix.TMPFS_MAGIC
	return nil
}

// add adds name to shadow directory f, in the staging area areaFd is on.
func (f *shadowFiles) add(areaFd int, name string) error {
	if len(f.names) >= maxShadowNames {
		return unix.EFBIG
	}
	for {
		if f.target == "" {
			t := f.dir + "-t" + strconv.Itoa(f.targetN)
			f.targetN++
			fd, err := unix.Openat(areaFd, t, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			if err != nil {
				return err
			}
			unix.Close(fd)
			f.target = t
		}
		err := unix.Linkat(areaFd, f.target, f.fd, name, 0)
		if err == unix.EMLINK {
			f.target = ""
			continue
		}
		if err == nil {
			f.names[name] = true
		}
		return err
	}
}

// DropDirShadows removes the shadow directories in the background, and
// returns a function that waits until they are gone. It is for the end of
// the transaction, once no process is in the view (Transaction.Commit):
// the shadows are no part of the journal and serve only stats, and a stat
// after it shows a changed directory's backing size. What cannot be
// removed is left to the staging area's removal, which reports it. A
// build in flight is canceled, and its directory removed once it ends.
func (v *Tx) DropDirShadows() (wait func()) {
	v.mu.Lock()
	var dirs []string
	var builds []*shadowBuild
	for _, s := range v.dirShadows {
		if b := s.stopBuildLocked(); b != nil {
			builds = append(builds, b) // waited for in the background
		}
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
	if len(dirs) == 0 && len(builds) == 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, b := range builds {
			dirs = append(dirs, b.release())
		}
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}()
	return func() { <-done }
}
