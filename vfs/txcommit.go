package vfs

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/store"
)

// Journal returns the redo operations that apply the transaction's changes
// to the host, in order.
func (v *Tx) Journal() []store.RedoOp {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.fullJournalLocked()
}

// CommitJournal is Journal for the commit, which it prepares: the staged
// objects' immutable and append-only flags (chattr +i, +a, which a
// transaction may set on what it created or changed) forbid the renames
// that place them and the changes of directories that carry them, so
// they are cleared on the staged objects now, before the commit point, and
// the journal ends with the ops that set them again once everything is
// in place (store.OpAddFlags), which recovery can redo.
func (v *Tx) CommitJournal() ([]store.RedoOp, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.stampAllLocked(); err != nil {
		return nil, err
	}
	flags, err := v.deferFlagsLocked()
	if err != nil {
		return nil, err
	}
	return append(append(v.fullJournalLocked(), v.newDirTimesLocked()...), flags...), nil
}

// deferredFlags are the inode flags deferFlagsLocked moves to the end of
// the write-through.
const deferredFlags = store.FlagImmutable | store.FlagAppend

// deferFlagsLocked clears the deferred flags of every staged regular file
// and directory and returns the ops that set them again on those still in
// the view, by path.
//
// Preconditions: v.mu held.
func (v *Tx) deferFlagsLocked() ([]store.RedoOp, error) {
	seen := map[*Node]bool{}
	var ops []store.RedoOp
	for _, n := range v.nodes {
		if seen[n] || n.staged == "" || n.anon || n.area == nil || n.area.fd < 0 ||
			(n.typ != unix.S_IFREG && n.typ != unix.S_IFDIR) {
			continue
		}
		seen[n] = true
		f, err := clearStagedFlags(n.area.fd, n.staged)
		if err != nil {
			return nil, &os.PathError{Op: "clear the inode flags of", Path: n.area.pathOf(n.staged), Err: err}
		}
		if f == 0 || n.keepsIdentity() {
			// A host directory's staged copy carries only attribute
			// changes: the caller's descriptors are on the host one.
			continue
		}
		var path string
		switch {
		case n.isDir():
			if n.removed {
				continue
			}
			path = n.viewPathLocked()
		case n.locDir == nil || n.locDir.removed || !n.locDir.entryIs(n.locName, n):
			continue
		default:
			path = childPath(n.locDir.viewPathLocked(), n.locName)
		}
		ops = append(ops, store.RedoOp{Kind: store.OpAddFlags, Path: path, Ino: n.replayIno, Mode: f})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Path < ops[j].Path })
	return ops, nil
}

// clearStagedFlags clears the deferred flags of name in the staging area
// at, and returns those it had. A file system without inode flags has
// none.
func clearStagedFlags(at int, name string) (uint32, error) {
	// One statx tells for most objects (file systems that report the
	// attributes) that there is nothing to clear, without opening them.
	const attrs = unix.STATX_ATTR_IMMUTABLE | unix.STATX_ATTR_APPEND
	var stx unix.Statx_t
	if unix.Statx(at, name, unix.AT_SYMLINK_NOFOLLOW, 0, &stx) == nil &&
		stx.Attributes_mask&attrs == attrs && stx.Attributes&attrs == 0 {
		return 0, nil
	}
	fd, err := unix.Openat(at, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOATIME|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	f, err := sysx.ChangeInodeFlags(fd, 0, deferredFlags)
	switch {
	case sysx.NoInodeFlags(err):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return f & deferredFlags, nil
}

// fullJournalLocked is the journal, with the copy-ups of files whose
// contents did not change left out or made attribute changes in place
// (sameDataCopiesLocked), plus the attributes that I/O gave host
// originals that keep their identity at commit: for hard-linked files,
// their staged copies' times and the set-ID bits a write by an
// unprivileged process clears; for FIFOs, the time they were last opened
// for writing. No call of the transaction named those
// changes (reads and writes on descriptors are not intercepted), and the
// data copy at commit would leave the file with the commit's time.
// Each is applied through a name the object has at the end, or before the
// removal of the last name the view knew (placeLocked); an object with no
// name left gets none.
//
// Preconditions: v.mu held.
func (v *Tx) fullJournalLocked() []store.RedoOp {
	out := append([]store.RedoOp(nil), v.journal...)
	seen := map[*Node]bool{}
	var times []store.RedoOp
	var early []placedOp // before graves
	for _, n := range v.nodes {
		if seen[n] || n.host == (FileID{}) || n.hostParent == nil || n.isDir() {
			continue
		}
		seen[n] = true
		p, ok := v.placeLocked(n)
		if !ok || p.path == "" {
			continue
		}
		path := p.path
		add := func(op store.RedoOp) {
			if p.before >= 0 {
				early = append(early, placedOp{p.before, op})
			} else {
				times = append(times, op)
			}
		}
		if n.typ == unix.S_IFIFO && n.changed != nil {
			// Written in the transaction (see openNodeLocked).
			add(store.RedoOp{Kind: store.OpSetattr, Path: path, Ino: n.replayIno,
				Attrs: store.AttrMtime, Mtime: store.Timespec{Sec: n.changed.Sec, Nsec: n.changed.Nsec}})
			continue
		}
		if n.typ != unix.S_IFREG || !n.inPlace || n.staged == "" {
			continue
		}
		var st, hst unix.Stat_t
		if unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			unix.Fstatat(n.hostParent.hostFd, n.hostName, &hst, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		var mask store.AttrMask
		if st.Mode != hst.Mode {
			mask |= store.AttrMode
		}
		if st.Atim != hst.Atim || st.Mtim != hst.Mtim {
			mask |= store.AttrAtime | store.AttrMtime
		}
		if mask == 0 {
			continue
		}
		add(store.RedoOp{Kind: store.OpSetattr,
			Path: path, Ino: n.replayIno,
			Attrs: mask, Mode: st.Mode & 0o7777,
			Atime: store.Timespec{Sec: st.Atim.Sec, Nsec: st.Atim.Nsec}, Mtime: store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}})
	}
	// Later graves first, so that the earlier ones' indices still hold;
	// each grave is one object's.
	sort.Slice(early, func(i, j int) bool { return early[i].before > early[j].before })
	for _, e := range early {
		out = slices.Insert(out, e.before, e.op)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Path < times[j].Path })
	out = append(out, times...)
	if same := v.sameDataCopiesLocked(out); same != nil {
		kept := out[:0]
		for _, op := range out {
			if op.Kind == store.OpRename || op.Kind == store.OpCopyData {
				if instead, ok := same[op.Src]; ok {
					if instead.Kind == store.OpSetattr {
						kept = append(kept, instead)
					}
					continue
				}
			}
			kept = append(kept, op)
		}
		out = kept
	}
	return out
}

// placedOp is an op to place before journal index before.
type placedOp struct {
	before int
	op     store.RedoOp
}

// Changed reports whether the transaction changed anything.
func (v *Tx) Changed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.fullJournalLocked()) > 0
}

// The kinds of granule (docs/semantics.md §3) of a write set, store.Granule.Kind.
// Validation (txn) checks each against the reads of the same path:
// an entry against any read of it (a lookup included) and the listing of
// its directory, data against reads of the contents or the attributes
// (which show its size and mtime), meta against reads of the attributes.
const (
	// GranuleEntry: the name was created or removed, or made to name
	// another object.
	GranuleEntry = "entry"
	// GranuleData: the contents of the object the name names changed,
	// and with them its size and times.
	GranuleData = "data"
	// GranuleMeta: the attributes of the object the name names changed:
	// mode, owner, times, extended attributes, inode flags, link count.
	GranuleMeta = "meta"
)

// WriteSet returns the granules the transaction writes, for validation of
// later transactions: for each op of its journal, the entries it changes,
// or the data and attributes of an object it changes without touching its
// name. Write-through replaces a changed file by its staged copy (a new
// inode under the same name), which is still a change of the file, not of
// the name: the copy-up says whether its contents or only its attributes
// changed. A data or meta granule carries the inode and, when the
// transaction sets it, the mtime the object has once written through, for
// the host validation of transactions that read it (ValidateReadSet).
func (v *Tx) WriteSet() []store.Granule {
	v.mu.Lock()
	defer v.mu.Unlock()
	at := map[[2]string]int{}
	var out []store.Granule
	areas := v.areasLocked()
	add := func(kind, p string, ino uint64, mtime store.Timespec) {
		if p == "" || isStaged(areas, p) {
			return
		}
		k := [2]string{kind, p}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, store.Granule{Kind: kind, Path: p})
		}
		if kind == GranuleEntry {
			return
		}
		// The last op on the object says what it ends with.
		if ino != 0 {
			out[i].Ino = ino
		}
		if mtime != (store.Timespec{}) {
			out[i].Mtime = mtime
		}
	}
	for _, op := range v.fullJournalLocked() {
		var mtime store.Timespec
		if op.Attrs&store.AttrMtime != 0 {
			mtime = op.Mtime
		}
		switch op.Kind {
		case store.OpRename, store.OpCopyData:
			n := v.copies[op.Src]
			if n != nil && n.hostPath == op.Path || op.Kind == store.OpCopyData {
				// The copy-up of the object at Path: it keeps its name,
				// and gets the copy's contents and times.
				var st unix.Stat_t
				if n != nil && n.area != nil && n.area.fd >= 0 && n.staged != "" &&
					unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					mtime = store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}
				}
				if n == nil || n.dataChanged {
					add(GranuleData, op.Path, op.Ino, mtime)
				}
				add(GranuleMeta, op.Path, op.Ino, mtime)
				continue
			}
			add(GranuleEntry, op.Path, 0, mtime)
			add(GranuleEntry, op.Src, 0, mtime)
		case store.OpLink:
			add(GranuleEntry, op.Path, 0, mtime)
			add(GranuleMeta, op.Src, op.Ino, mtime) // its link count
		case store.OpSetattr, store.OpSetxattr, store.OpRemovexattr, store.OpAddFlags:
			add(GranuleMeta, op.Path, op.Ino, mtime)
		case store.OpFsyncDir:
			// Changes nothing.
		default: // exchange, unlink, rmdir
			add(GranuleEntry, op.Path, 0, mtime)
			add(GranuleEntry, op.Src, 0, mtime)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// ReadPaths returns the host paths the transaction read.
func (v *Tx) ReadPaths() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]string, 0, len(v.reads))
	for p := range v.reads {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ListedPaths returns the host directories whose listing the transaction
// read.
func (v *Tx) ListedPaths() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for p, r := range v.reads {
		if r.listing {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// lstatLong is lstat of a host path that may be longer than PATH_MAX: a
// transaction reaches deeper objects through relative paths, and
// validating them must not take ENAMETOOLONG for their removal.
func lstatLong(p string, st *unix.Stat_t) error {
	name, done, err := sysx.ShortPath(p)
	if err != nil {
		return err
	}
	defer done()
	return unix.Lstat(name, st)
}

// openDirLong opens the host directory p, which may be longer than
// PATH_MAX, with O_PATH.
func openDirLong(p string) (int, error) {
	name, done, err := sysx.ShortPath(p)
	if err != nil {
		return -1, err
	}
	defer done()
	return unix.Open(name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// isStaged reports whether p names an object in one of the staging areas.
func isStaged(areas []*area, p string) bool {
	for _, a := range areas {
		if strings.HasPrefix(p, a.path+"/") {
			return true
		}
	}
	return false
}

// ConflictError says why a transaction cannot commit: what it read has
// changed since.
type ConflictError struct {
	Path   string
	Reason string
}

func (e *ConflictError) Error() string { return fmt.Sprintf("conflict on %s (%s)", e.Path, e.Reason) }

// Validate checks the read set against the host, as ValidateReadSet, and
// against the transaction's own effects on the host: a file the command
// writes through an inherited descriptor (SetOutputs) changes its data,
// and a socket it bound adds an entry to a directory it listed. It
// must run while no other transaction can commit.
func (v *Tx) Validate(rewritten map[string][]store.Granule) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.doomed != nil {
		return v.doomed
	}
	return validateReads(v.readSetLocked(), rewritten, v.outputs, v.madeAfterListing)
}

// SetOutputs names the files the command writes through descriptors it
// inherited from outside txexec (`txexec -- ls -l > out.txt`): those
// writes go straight to the host and are outside the transaction, so a
// change of such a file's data after the transaction read it is its own
// doing, not a conflict. Its identity, mode and owner are still validated.
func (v *Tx) SetOutputs(ids []FileID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.outputs = map[FileID]bool{}
	for _, id := range ids {
		v.outputs[id] = true
	}
}

// OutputsOf returns the regular files that fds (the descriptors the
// command will inherit) are open for writing.
func OutputsOf(fds []int) []FileID {
	var out []FileID
	for _, fd := range fds {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil && fl&unix.O_ACCMODE != unix.O_RDONLY {
			out = append(out, idOf(&st))
		}
	}
	return out
}

// StagingAreas returns the absolute paths of the transaction's staging
// areas, home first: what txn.SyncStaged makes durable.
func (v *Tx) StagingAreas() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, a := range v.areasLocked() {
		out = append(out, a.path)
	}
	return out
}

// Close releases the view's descriptors, and removes the host entries the
// transaction made at once unless KeepHostEffects said it committed. The
// staging areas are the caller's to remove.
func (v *Tx) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.undoHostEffectsLocked()
	for _, n := range v.nodes {
		if n.hostFd >= 0 {
			unix.Close(n.hostFd)
			n.hostFd = -1
		}
		if n.anon && n.anonFd >= 0 {
			unix.Close(n.anonFd)
			n.anonFd = -1
		}
	}
	if v.roRootFd >= 0 {
		unix.Close(v.roRootFd)
		v.roRootFd = -1
	}
	for _, s := range v.dirShadows {
		if b := s.stopBuildLocked(); b != nil {
			// Its directory goes with the staging area, after this.
			b.release()
		}
		if s.fd >= 0 {
			unix.Close(s.fd)
			s.fd = -1
		}
	}
	for _, a := range v.areasLocked() {
		if a.fd >= 0 {
			unix.Close(a.fd)
			a.fd = -1
		}
	}
	v.clock.Close()
}
