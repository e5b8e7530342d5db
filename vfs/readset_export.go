package vfs

import (
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
	out := make([]store.ReadRecord, 0, len(v.reads))
	for p, r := range v.reads {
		out = append(out, store.ReadRecord{
			Path: p, Exists: r.exists, Dev: r.id.Dev, Ino: r.id.Ino, Type: r.typ,
			Meta: r.meta, Mode: r.mode, UID: r.uid, GID: r.gid, Size: r.size,
			Mtime:   store.Timespec{Sec: r.mtime.Sec, Nsec: r.mtime.Nsec},
			Ctime:   store.Timespec{Sec: r.ctime.Sec, Nsec: r.ctime.Nsec},
			Listing: r.listing, ListingSum: r.listingChecksum,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ValidateReadSet checks records taken by ReadSet against the host, as
// Tx.Validate checks a live transaction's: every name still names what it
// named, every object whose attributes or data were read still has them,
// every listing read has the same names. It returns a *ConflictError for
// the first path (in order) that changed. It must run while no other
// transaction can commit.
func ValidateReadSet(reads []store.ReadRecord) error {
	recs := append([]store.ReadRecord(nil), reads...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Path < recs[j].Path })
	for _, r := range recs {
		p := r.Path
		var st unix.Stat_t
		err := lstatLong(p, &st)
		if !r.Exists {
			if err == nil {
				return &ConflictError{p, "created by another process after the transaction found it absent"}
			}
			continue
		}
		if err != nil {
			return &ConflictError{p, "removed by another process after it was read"}
		}
		if idOf(&st) != (FileID{Dev: r.Dev, Ino: r.Ino}) || st.Mode&unix.S_IFMT != r.Type {
			return &ConflictError{p, "replaced by another process after it was read"}
		}
		if r.Meta {
			if st.Mode != r.Mode || st.Uid != r.UID || st.Gid != r.GID {
				return &ConflictError{p, "its mode or owner was changed by another process after it was read"}
			}
			mtime := unix.Timespec{Sec: r.Mtime.Sec, Nsec: r.Mtime.Nsec}
			ctime := unix.Timespec{Sec: r.Ctime.Sec, Nsec: r.Ctime.Nsec}
			if r.Type != unix.S_IFDIR && (st.Size != r.Size || st.Mtim != mtime || st.Ctim != ctime) {
				return &ConflictError{p, "modified by another process after it was read"}
			}
		}
		if r.Listing {
			fd, err := openDirLong(p)
			if err != nil {
				return &ConflictError{p, "removed by another process after it was listed"}
			}
			ents, err := readHostDir(fd)
			unix.Close(fd)
			if err != nil || listingChecksum(ents) != r.ListingSum {
				return &ConflictError{p, "an entry was created or removed by another process after the directory was listed"}
			}
		}
	}
	return nil
}
