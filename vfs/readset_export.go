package vfs

import (
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// ReadSet returns what the transaction observed of every host path it
// read, sorted by path, as plain records: for storing with a kept (or
// committed) transaction, so that it can be validated against the host
// later, by another process, with ValidateReadSet. It only reads.
func (v *Tx) ReadSet() []store.ReadRecord {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.readSetLocked()
}

// readSetLocked is ReadSet.
//
// Preconditions: v.mu held.
func (v *Tx) readSetLocked() []store.ReadRecord {
	out := make([]store.ReadRecord, 0, len(v.reads))
	for p, r := range v.reads {
		out = append(out, store.ReadRecord{
			Path: p, Exists: r.exists, Dev: r.id.Dev, Ino: r.id.Ino, Type: r.typ,
			Data: r.data, Meta: r.meta, Mode: r.mode, UID: r.uid, GID: r.gid, Size: r.size,
			Mtime:   store.Timespec{Sec: r.mtime.Sec, Nsec: r.mtime.Nsec},
			Ctime:   store.Timespec{Sec: r.ctime.Sec, Nsec: r.ctime.Nsec},
			Listing: r.listing, ListingSum: r.listingChecksum,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ValidateReadSet checks records taken by ReadSet against the host: every
// name still names what it named (or is still absent), every listing read
// has the same names, and every object whose granules were read still has
// what the read saw of them:
//
//   - its attributes (Meta): mode, owner and group, and for a
//     non-directory also size, mtime and ctime, unchanged;
//   - its data (Data) of a non-directory: size and mtime unchanged, and
//     its ctime unchanged unless its mode or owner changed. Writing data
//     moves the ctime, but so does every change of attributes, and the
//     kernel tells no more: a ctime that moved while mode and owner did
//     not (a change of extended attributes or times, a chmod to the same
//     mode, or new data under restored times) is taken for a change of
//     the data.
//
// rewritten are, by path, the data and meta granules that transactions
// committed since this one began wrote to objects it read, without
// conflict (the caller checked them against the same read set): their
// write-through may have replaced the object by its staged copy, a new
// inode, and set any attribute. So for those paths the object may also be
// one of the inodes those granules name, and a data read's mtime one they
// set; the mode, owner and ctime are not checked. It returns a
// *ConflictError for the first path (in order) that changed. It must run
// while no other transaction can commit.
func ValidateReadSet(reads []store.ReadRecord, rewritten map[string][]store.Granule) error {
	return validateReads(reads, rewritten, nil, nil)
}

// validateReads is ValidateReadSet, where the data of outputs is not
// checked (SetOutputs) and the names in mine are left out of the listings
// of the directories they are in (Tx.madeAfterListing).
func validateReads(reads []store.ReadRecord, rewritten map[string][]store.Granule, outputs map[FileID]bool, mine map[string]map[string]bool) error {
	recs := append([]store.ReadRecord(nil), reads...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Path < recs[j].Path })
	for _, r := range recs {
		if err := validateRead(r, rewritten[r.Path], outputs, mine[r.Path]); err != nil {
			return err
		}
	}
	return nil
}

// validateRead checks one record (see ValidateReadSet); rewrites are the
// granules of rewritten for its path.
func validateRead(r store.ReadRecord, rewrites []store.Granule, outputs map[FileID]bool, mine map[string]bool) error {
	p := r.Path
	var st unix.Stat_t
	err := lstatLong(p, &st)
	if !r.Exists {
		if err == nil {
			return &ConflictError{p, "created by another process after the transaction found it absent"}
		}
		return nil
	}
	if err != nil {
		return &ConflictError{p, "removed by another process after it was read"}
	}
	id := FileID{Dev: r.Dev, Ino: r.Ino}
	mtime := unix.Timespec{Sec: r.Mtime.Sec, Nsec: r.Mtime.Nsec}
	ctime := unix.Timespec{Sec: r.Ctime.Sec, Nsec: r.Ctime.Nsec}
	sameID, sameMtime := idOf(&st) == id, st.Mtim == mtime
	for _, g := range rewrites {
		sameID = sameID || st.Dev == r.Dev && st.Ino == g.Ino || g.Ino == 0
		sameMtime = sameMtime || g.Mtime != (store.Timespec{}) && st.Mtim == unix.Timespec{Sec: g.Mtime.Sec, Nsec: g.Mtime.Nsec}
	}
	if st.Mode&unix.S_IFMT != r.Type || !sameID {
		return &ConflictError{p, "replaced by another process after it was read"}
	}
	rewritten := len(rewrites) > 0
	dir := r.Type == unix.S_IFDIR
	sameOwner := st.Mode == r.Mode && st.Uid == r.UID && st.Gid == r.GID
	switch {
	case r.Meta && !sameOwner:
		return &ConflictError{p, "its mode or owner was changed by another process after it was read"}
	case r.Meta && !dir && !outputs[id] && (st.Size != r.Size || st.Mtim != mtime || st.Ctim != ctime):
		return &ConflictError{p, "modified by another process after it was read"}
	case r.Data && !dir && !outputs[id] && (st.Size != r.Size || !sameMtime):
		return &ConflictError{p, "modified by another process after it was read"}
	case r.Data && !dir && !outputs[id] && !rewritten && st.Ctim != ctime && sameOwner:
		return &ConflictError{p, "changed by another process after it was read, perhaps its data: its ctime moved, its mode and owner did not"}
	}
	if r.Listing {
		fd, err := openDirLong(p)
		if err != nil {
			return &ConflictError{p, "removed by another process after it was listed"}
		}
		ents, err := readHostDir(fd)
		unix.Close(fd)
		if len(mine) > 0 {
			ents = slices.DeleteFunc(ents, func(e Dirent) bool { return mine[e.Name] })
		}
		if err != nil || listingChecksum(ents) != r.ListingSum {
			return &ConflictError{p, "an entry was created or removed by another process after the directory was listed"}
		}
	}
	return nil
}
