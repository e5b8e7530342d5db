package vfs

import (
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/fastlookup"
)

// The transaction's side of the fast path for read-only lookups
// (docs/fastpath.md §4.5, §4.7): what the view publishes into the tree's
// shared sets before it changes anything, the host directories it offers
// the agent, and the feed of the agent's records into the read set.

// publishLocked makes the changes noted since the last publication visible
// to the agent, ahead of the change the caller is about to make.
//
// Preconditions: v.mu held.
func (v *Tx) publishLocked() {
	if v.fast != nil {
		v.fast.Publish()
	}
}

// fastEntryLocked publishes that name in dir is about to change (made,
// removed, renamed from or to, bound): the name and everything under it,
// and dir's own attributes (its times, size and link count in the view).
//
// Preconditions: v.mu held.
func (v *Tx) fastEntryLocked(dir *Node, name string) {
	if v.fast == nil {
		return
	}
	for _, d := range v.dirPathsLocked(dir) {
		v.fast.Change(childPath(d, name), fastlookup.ChangedSubtree)
		v.fast.Change(d, fastlookup.ChangedSelf)
	}
	v.publishLocked()
}

// fastNodeLocked publishes that object n is about to show other attributes
// (or data) in the view than its host original: a directory's own
// attributes (all of its subtree when its mode or owner changes: search
// permission), or a non-directory by every name the view knows, and by its
// identity for the names it does not (other hard links).
//
// Preconditions: v.mu held.
func (v *Tx) fastNodeLocked(n *Node, dirKind fastlookup.Kind) {
	if v.fast == nil {
		return
	}
	if n.isDir() {
		// A directory out of the view (not in it yet: its entry is
		// published when made; or removed) has no path; its identity
		// still is published below.
		if n.parent != nil || n == v.root {
			for _, p := range v.dirPathsLocked(n) {
				v.fast.Change(p, dirKind)
			}
		}
	} else {
		if n.hostPath != "" {
			v.fast.Change(n.hostPath, fastlookup.ChangedSubtree)
		}
		if n.locDir != nil {
			for _, d := range v.dirPathsLocked(n.locDir) {
				v.fast.Change(childPath(d, n.locName), fastlookup.ChangedSubtree)
			}
		}
		for _, r := range n.names {
			for _, d := range v.dirPathsLocked(r.dir) {
				v.fast.Change(childPath(d, r.name), fastlookup.ChangedSubtree)
			}
		}
	}
	if n.host != (FileID{}) {
		v.fast.ChangeObject(n.host.Dev, n.host.Ino)
	}
	v.publishLocked()
}

// fastOwnObjectLocked publishes an object of the view's own (a staged
// copy, a path token, an O_TMPFILE file), before the program can hold a
// descriptor of it: the view answers a lookup of such a descriptor with
// the object it stands for, so the agent must forward it (but the fstat of
// one that fastNativeLocked publishes too).
//
// Preconditions: v.mu held.
func (v *Tx) fastOwnObjectLocked(id FileID) {
	if v.fast == nil {
		return
	}
	v.fast.ChangeObject(id.Dev, id.Ino)
	v.publishLocked()
}

// fastNativeLocked publishes n's staged object, just registered, as one
// whose fstat the agent answers natively (Tree.AddNative), when the view's
// stat of n is the kernel's fstat of that object, field for field
// (nativeFstatLocked).
//
// Preconditions: v.mu held; fastOwnObjectLocked published the object.
func (v *Tx) fastNativeLocked(n *Node) {
	if v.fast != nil && v.nativeFstatLocked(n) {
		v.fast.AddNative(n.stagedID.Dev, n.stagedID.Ino)
	}
}

// nativeFstatLocked reports whether statAsLocked answers for n exactly
// what the kernel's fstat of n's staged object does: a regular file of the
// view's own (created or staged by the transaction; not an O_TMPFILE
// file, not a host object that keeps its identity), whose device, inode
// number, mode, owner, size, blocks and times are the object's, with no
// times the view stamps (deterministic runs), no ctime of the view's own
// (a rename, a link count changed, an attribute change the object does
// not show: Node.ctime) and the object's own link count (one, or a view
// count that stagedLinksLocked gave the object).
//
// Preconditions: v.mu held.
func (v *Tx) nativeFstatLocked(n *Node) bool {
	return n.typ == unix.S_IFREG && n.staged != "" && !n.anon && !n.keepsIdentity() && !n.removed &&
		!v.StampTimes && !v.VirtualInodes && n.ctime == nil && n.changed == nil && !n.areaChild &&
		(!n.nlinkSet || n.nlink == uint64(1+n.extraLinks))
}

// fastNotNativeLocked takes n's staged object out of the agent's natives
// for good (Tree.DropNative), before the view answers its stat otherwise
// than the object's own fstat: a ctime or link count of its own, or
// another staged object.
//
// Preconditions: v.mu held.
func (v *Tx) fastNotNativeLocked(n *Node) {
	if v.fast != nil && n.staged != "" && !n.anon {
		v.fast.DropNative(n.stagedID.Dev, n.stagedID.Ino)
	}
}

// dirPathsLocked are the absolute paths directory d has: in the view, and
// on the host if it was found elsewhere (a directory the transaction
// renamed).
//
// Preconditions: v.mu held.
func (v *Tx) dirPathsLocked(d *Node) []string {
	vp := d.viewPathLocked()
	if d.hostPath != "" && d.hostPath != vp {
		return []string{vp, d.hostPath}
	}
	return []string{vp}
}

// noteFastDirLocked offers directory n, which a walk went through, to the
// agent as a fast directory: a host directory that keeps its host
// attributes, at its own host path (so reached without a symlink: a node's
// host path names no symlink), not renamed in the view, outside the
// passthrough subtrees (/proc, /sys, /dev, --exclude), whose answers the
// view emulates or which depend on who asks. Each directory is offered
// once; one that is not fast then never becomes so (it would be under a
// change, which stays).
//
// Preconditions: v.mu held.
func (v *Tx) noteFastDirLocked(n *Node) {
	if v.fast == nil || n.fastNoted {
		return
	}
	n.fastNoted = true
	if n.hostFd < 0 || n.host == (FileID{}) || n.staged != "" || n.passthrough || n.removed || n.anon {
		return
	}
	if n.viewPathLocked() != n.hostPath || v.underPassthrough(n.hostPath) {
		return
	}
	v.fast.AddFastDir(n.hostPath, n.host.Dev, n.host.Ino)
}

// noteFastLinkLocked offers symlink n, named name in directory dir, which
// a walk followed to target (its contents) and then resolved without an
// error, to the agent (Tree.AddLink): a host symlink the view has not
// changed, in a fast directory, whose target leads lexically to a fast
// directory (a symlink in the middle of a path) or to a name in one (at
// its end). The agent then checks a path through it as the one it leads
// to, and makes the call with the path as given, whose resolution the
// kernel does as the view did, unless the host changed the symlink
// meanwhile, which the feed finds (another object than the record's) and
// validation would.
//
// Preconditions: v.mu held; the walk was the caller's from the view's root,
// without openat2 restrictions.
func (v *Tx) noteFastLinkLocked(c *Caller, dir, n *Node, name, target string, last bool) {
	if v.fast == nil || target == "" || n.staged != "" || n.host == (FileID{}) || n.anon || n.removed {
		return
	}
	if !v.fast.IsFastDir(dir.hostPath) || dir.viewPathLocked() != dir.hostPath {
		return
	}
	to := target
	if !path.IsAbs(to) {
		to = dir.hostPath + "/" + to
	}
	to = path.Clean(to)
	if v.underPassthrough(to) {
		return
	}
	if !last {
		if v.fast.IsFastDir(to) {
			v.fast.AddLink(childPath(dir.hostPath, name), to)
		}
		return // else the walk went on elsewhere (another symlink on the way)
	}
	if strings.HasSuffix(target, "/") || to == "/" || !v.fast.IsFastDir(path.Dir(to)) {
		return
	}
	// The kernel follows the target too if it is a symlink, and the
	// record names the target: only one published already (the walk
	// followed it first) leads on.
	r, err := v.walkLocked(c, v.root, to, false, &walkState{})
	if err != nil || r.node != nil && r.node.typ == unix.S_IFLNK {
		if _, ok := v.fast.Link(to); err != nil || !ok {
			return
		}
	}
	v.fast.AddLink(childPath(dir.hostPath, name), to)
}

// underPassthrough reports whether host path p is in a passthrough
// subtree.
func (v *Tx) underPassthrough(p string) bool {
	for _, x := range v.passthrough {
		if under(p, x) {
			return true
		}
	}
	return false
}

// FeedFastLookups drains the ring of one process of the tree and feeds
// every record into the read set (feedLocked), before the supervisor
// serves any other call of the tree, when a process exits, and before
// validation. A malformed record dooms the transaction: the program wrote
// into its ring itself, and the read set could no longer be complete. It
// returns the number of records fed and why the transaction was doomed by
// one, if it was.
func (v *Tx) FeedFastLookups(g *fastlookup.Ring) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.fast == nil {
		return 0, fmt.Errorf("feed fast lookups: the view has no fast-lookup tree")
	}
	n, err := g.Drain(v.feedLocked)
	if err != nil && v.doomed == nil {
		v.doomed = fmt.Errorf("fast lookups: %w", err)
	}
	return n, err
}

// FeedFastLookupsReleasing is FeedFastLookups for a ring no process maps
// any more (every process that did has exited or execed): the slots a
// thread reserved and never published (it died in the agent) are released
// after the drain (Ring.ReleaseHoles).
func (v *Tx) FeedFastLookupsReleasing(g *fastlookup.Ring) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.fast == nil {
		return 0, fmt.Errorf("feed fast lookups: the view has no fast-lookup tree")
	}
	n, err := g.ReleaseHoles(v.feedLocked)
	if err != nil && v.doomed == nil {
		v.doomed = fmt.Errorf("fast lookups: %w", err)
	}
	return n, err
}

// feedLocked adds one record of a lookup the agent made natively to the
// read set, as a host lookup with the identity the caller observed:
//   - a path (or object) the transaction changed after the record's
//     generation: a read of the host before the change, kept as a read the
//     view made then would be (observedBeforeChangeLocked);
//   - one it changed at or before it: the agent had to forward the call,
//     and the program saw the host where its view differs: doomed;
//   - a record relative to a fast directory's descriptor is one of the
//     name's path in that directory, whose path the tree kept;
//   - any other: the view walks the path (its nodes for fast directories
//     are cached, and the directory of the last records: feedWalkLocked)
//     and records each entry on the way; if it names another
//     object there than the one observed, or none, the host changed
//     between the call and now: doomed at once (hostChanged), as
//     validation would find at commit.
//
// Preconditions: v.mu held; v.fast set.
func (v *Tx) feedLocked(rec *fastlookup.Record) error {
	if rec.Generation > v.fast.Generation() {
		return &fastlookup.MalformedError{Position: rec.Position,
			Why: fmt.Sprintf("generation %d not published yet", rec.Generation)}
	}
	if rec.Descriptor {
		return v.feedDescriptorLocked(rec)
	}
	if rec.Relative {
		// A name looked up relative to a descriptor of a fast directory:
		// the record of the name's path there.
		dir, ok := v.fast.DirPath(rec.DirDev, rec.DirIno)
		if !ok {
			return &fastlookup.MalformedError{Position: rec.Position,
				Why: fmt.Sprintf("directory %d:%d was no fast directory", rec.DirDev, rec.DirIno)}
		}
		rec.Path, rec.Relative = childPath(dir, rec.Path), false
	}
	changedAt, changed := v.fast.ChangedAt(rec.Path)
	switch {
	case typeOnly(rec):
		// A directory's readlink reads its type alone: only its name
		// (or one above it) changing counts, not its attributes.
		changedAt, changed = v.fast.NameChangedAt(rec.Path)
	case rec.Observed:
		if at, ok := v.fast.ObjectChangedAt(rec.Dev, rec.Ino); ok && (!changed || at < changedAt) {
			changedAt, changed = at, true
		}
	}
	if changed && changedAt <= rec.Generation {
		return v.fastDoom(rec.Path, "a fast lookup read the host after the transaction changed it")
	}
	if changed {
		return v.observedBeforeChangeLocked(rec)
	}
	r, err := v.feedWalkLocked(rec.Path)
	switch {
	case v.doomed != nil:
		return nil // the walk found the host changed (hostChanged)
	case r.pass:
		return nil // a passthrough subtree: nothing to validate
	case err == unix.ENOENT || err == unix.ENOTDIR || err == nil && r.node == nil:
		if rec.Observed {
			return v.fastDoom(rec.Path, "")
		}
		return nil
	case err != nil:
		return nil
	}
	n := r.node
	if !rec.Observed {
		if rec.Result == -int64(unix.ENOENT) {
			return v.fastDoom(rec.Path, "")
		}
		return nil // EACCES and the like: the entries on the way are recorded
	}
	if n.host != (FileID{Dev: rec.Dev, Ino: rec.Ino}) || n.typ != rec.Mode&unix.S_IFMT {
		return v.fastDoom(rec.Path, "")
	}
	st := observedStat(rec)
	g := recordGranules(rec.Nr)
	if !v.sameFirstReadLocked(n.hostPath, &st, n.isDir(), g) {
		return v.fastDoom(rec.Path, "")
	}
	if g != 0 {
		v.recordReadLocked(n, &st, g)
	}
	return nil
}

// feedDescriptorLocked adds the record of a lookup of a descriptor itself
// (fstat, as glibc makes it: newfstatat(fd, "", AT_EMPTY_PATH)) to the
// read set, as the view would have served it (HandleOf, nodeOfFDLocked):
// the object by its identity if the view knows it, else by the path the
// kernel kept for the descriptor, if that still names the object; else
// the host would have answered, with nothing to record. An object the
// transaction changed (or one of the view's own) at or before the record's
// generation was the agent's to forward: doomed; after it, the lookup read
// the host before the change, which the change's own record of the
// original covers.
//
// Preconditions: v.mu held; v.fast set.
func (v *Tx) feedDescriptorLocked(rec *fastlookup.Record) error {
	if at, ok := v.fast.ObjectChangedAt(rec.Dev, rec.Ino); ok {
		if at <= rec.Generation {
			return v.fastDoom(rec.Path, "a fast lookup read a descriptor of an object the transaction changed")
		}
		return nil
	}
	st := observedStat(rec)
	n := v.nodeOfObjectLocked(&st, func() string { return rec.Path })
	if v.doomed != nil || n == nil || !n.isHostObject(&st) || n.staged != "" || n.anon {
		return nil // the host would have answered; or not a host original as it is
	}
	// The agent takes only descriptors open for reading or writing (an
	// O_PATH one's stat it forwards): their stat is part of reading the
	// file through them (statGranules).
	g := readMeta
	if n.typ == unix.S_IFREG {
		g = readData
	}
	if n.hostPath != "" && !v.sameFirstReadLocked(n.hostPath, &st, n.isDir(), g) {
		return v.fastDoom(n.hostPath, "")
	}
	v.recordReadLocked(n, &st, g)
	return nil
}

// observedBeforeChangeLocked records what a call made before the
// transaction changed rec.Path observed of the host: the read set's record
// of the path if it has none; else that record must agree with it (the
// host is unchanged by the transaction until commit, so a difference is
// another process's change).
//
// Preconditions: v.mu held.
func (v *Tx) observedBeforeChangeLocked(rec *fastlookup.Record) error {
	if !rec.Observed && rec.Result != -int64(unix.ENOENT) {
		return nil
	}
	r, had := v.reads[rec.Path]
	if had {
		id := FileID{Dev: rec.Dev, Ino: rec.Ino}
		if r.exists != rec.Observed || rec.Observed && (r.id != id || r.typ != rec.Mode&unix.S_IFMT) {
			return v.fastDoom(rec.Path, "")
		}
	}
	if !rec.Observed {
		if !had {
			v.reads[rec.Path] = readRecord{}
		}
		return nil
	}
	st := observedStat(rec)
	dir := rec.Mode&unix.S_IFMT == unix.S_IFDIR
	g := recordGranules(rec.Nr)
	if !v.sameFirstReadLocked(rec.Path, &st, dir, g) {
		return v.fastDoom(rec.Path, "")
	}
	if !had {
		r = readRecord{exists: true, id: FileID{Dev: rec.Dev, Ino: rec.Ino}, typ: rec.Mode & unix.S_IFMT}
	}
	if g != 0 && !r.data && !r.meta {
		r.mode, r.uid, r.gid = st.Mode, st.Uid, st.Gid
		if !dir {
			r.size, r.mtime, r.ctime = st.Size, st.Mtim, st.Ctim
		}
	}
	r.data = r.data || g&readData != 0
	r.meta = r.meta || g&readMeta != 0
	v.reads[rec.Path] = r
	return nil
}

// sameFirstReadLocked reports whether the attributes st a call that reads
// granules g observed agree with those the read set already holds for path
// from an earlier read of the object's granules (true if it holds none),
// as validation would compare them: with the attributes read on either
// side, all of them; with the data alone on both, what validates the data
// (size and mtime, and a ctime that moved only with the mode or owner: a
// chmod does not change what a reader of the data read). A call that
// reads neither (readlink's EINVAL) compares nothing.
//
// Preconditions: v.mu held.
func (v *Tx) sameFirstReadLocked(path string, st *unix.Stat_t, dir bool, g granules) bool {
	r, ok := v.reads[path]
	if !ok || !r.data && !r.meta || g == 0 {
		return true
	}
	sameOwner := r.mode == st.Mode && r.uid == st.Uid && r.gid == st.Gid
	if r.meta || g&readMeta != 0 {
		return sameOwner && (dir || r.size == st.Size && r.mtime == st.Mtim && r.ctime == st.Ctim)
	}
	return dir || r.size == st.Size && r.mtime == st.Mtim && (r.ctime == st.Ctim || !sameOwner)
}

// fastDoom dooms the transaction for a record of path; why empty: the host
// changed between the call and the feed.
//
// Preconditions: v.mu held.
func (v *Tx) fastDoom(path, why string) error {
	if why == "" {
		v.hostChanged(path, unix.ESTALE)
		return nil
	}
	if v.doomed == nil {
		v.doomed = fmt.Errorf("conflict on %s (%s)", path, why)
	}
	return nil
}

// recordGranules is what a fast call reads of the object besides its name:
// a stat or access its attributes, an open its data; a readlink, which the
// agent makes as an lstat and answers EINVAL for a non-symlink, only its
// type, which the entry holds.
func recordGranules(nr int) granules {
	switch {
	case nr == unix.SYS_OPENAT:
		return readData
	case fastlookup.IsReadlink(nr):
		return 0
	}
	return readMeta
}

// typeOnly reports whether rec is a readlink that found a directory
// (EINVAL): a lookup of the entry's type alone, which the agent makes even
// when the transaction changed the directory's own attributes (an entry
// made in it).
func typeOnly(rec *fastlookup.Record) bool {
	return fastlookup.IsReadlink(rec.Nr) && rec.Result == -int64(unix.EINVAL) && rec.Observed &&
		rec.Mode&unix.S_IFMT == unix.S_IFDIR
}

// observedStat is the stat(2) form of what a record observed.
func observedStat(rec *fastlookup.Record) unix.Stat_t {
	return unix.Stat_t{Dev: rec.Dev, Ino: rec.Ino, Mode: rec.Mode, Uid: rec.UID, Gid: rec.GID,
		Size: rec.Size, Mtim: rec.Mtime, Ctim: rec.Ctime}
}
