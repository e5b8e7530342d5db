package txn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/store"
)

// Keeper makes Apply keep the before-images of transaction ID, for txexec
// undo: before an op replaces or removes a host object, the object is
// hard-linked into an undo area on its own mount (no copy: on ext4 it
// takes no space until the original would have been freed); what an op
// changes in place (attributes, extended attributes, inode flags, a
// removed directory's attributes) is written as a record; the data an
// in-place write (store.OpCopyData) overwrites is copied first (a
// reflink where the file system has them), since that file must keep its
// inode. Records go to UndoDir(ID)/records, one JSON line per op, before
// the op, except for runs of ops that place new objects (plan): one line
// before the run, and one more for each op of it that finds its path
// taken. At the end Apply adds the state every changed path is left in
// (its after-state), which undo compares with the host.
//
// It is idempotent as Apply is: a record or before-image that exists
// already (a write-through redone after a crash) is kept, and an op found
// done already is skipped before anything is kept, so the object it put
// in place is never taken for the one it replaced.
type Keeper struct {
	Store *store.Store
	ID    int64
	// Staging are the transaction's staging areas: an op whose path is
	// in one (a link anchor) changes nothing on the host, and one whose
	// source is in one places a new object.
	Staging []string
	// Bytes and Records are set by Apply: the space the before-images
	// hold, and the records (for Store.MarkAppliedKeeping, which makes
	// them durable with the mark that the transaction is applied).
	Bytes   int64
	Records []byte
	// Redo says the write-through is redone (recovery): an op found done
	// already whose record is missing lost it (a power cut between the
	// two), and the transaction cannot be undone.
	Redo bool
}

// recordsName is the file of the records in a transaction's UndoDir.
const recordsName = "records"

// beforeImage is what an op of a transaction replaced or removed or
// changed, as it was before the op: one line of the records file.
type beforeImage struct {
	N    int          `json:"n"`
	Kind store.OpKind `json:"kind"`
	// Image is the hard link (or, for OpCopyData, the copy) of the object
	// the op replaced, removed or overwrote, in the undo area on the
	// mount MountPoint ("" for the state directory's mount).
	Image      string `json:"image,omitempty"`
	MountPoint string `json:"mount_point,omitempty"`
	// Absent: nothing was at the op's path (a create).
	Absent bool `json:"absent,omitempty"`
	// Ino, Type, Mode, UID, GID and the times are the object's before
	// the op.
	Ino   uint64         `json:"ino,omitempty"`
	Type  uint32         `json:"type,omitempty"`
	Mode  uint32         `json:"mode,omitempty"`
	UID   uint32         `json:"uid,omitempty"`
	GID   uint32         `json:"gid,omitempty"`
	Atime store.Timespec `json:"atime,omitzero"`
	Mtime store.Timespec `json:"mtime,omitzero"`
	// Xattrs are a removed or replaced directory's extended attributes.
	Xattrs map[string][]byte `json:"xattrs,omitempty"`
	// XattrValue is the value the op's extended attribute had, unless
	// XattrAbsent.
	XattrValue  []byte `json:"xattr_value,omitempty"`
	XattrAbsent bool   `json:"xattr_absent,omitempty"`
	// Flags are the object's inode flags (OpAddFlags, OpClearFlags,
	// OpRmdir).
	Flags uint32 `json:"flags,omitempty"`
	// Placed is the type of the object an OpRename puts at its path.
	Placed uint32 `json:"placed,omitempty"`
	// Lost: the op was found done by a redo, without its record.
	Lost bool `json:"lost,omitempty"`
	// Bytes is the space Image holds that nothing else does.
	Bytes int64 `json:"bytes,omitempty"`
	// intended: not a line of its own, but an op of a creates line that
	// has none (see record.Creates).
	intended bool
}

// PathState is what a path holds: nothing, or an object of a type and
// inode, with its mode, owner, size and mtime, which a change of its
// contents, its attributes or (for a directory) its entries moves. Not
// its ctime: that moves with its link count too, which txexec's own undo
// areas change when they link or drop a before-image that undo put back.
//
// In the records it is a JSON array without the path (the after-state
// lists the paths afterPaths gives, in its order): a write-through of
// many files stores one per file, with the mark that it is applied.
type PathState struct {
	Path   string
	Exists bool
	Type   uint32
	Ino    uint64
	Mode   uint32
	UID    uint32
	GID    uint32
	Size   int64
	Mtime  store.Timespec
}

// MarshalJSON writes s as [] (absent) or [type, ino, mode, uid, gid,
// size, mtime seconds, mtime nanoseconds].
func (s PathState) MarshalJSON() ([]byte, error) {
	return s.appendJSON(make([]byte, 0, 64)), nil
}

func (s PathState) appendJSON(b []byte) []byte {
	if !s.Exists {
		return append(b, "[]"...)
	}
	b = append(b, '[')
	for i, v := range []int64{int64(s.Type), int64(s.Ino), int64(s.Mode), int64(s.UID), int64(s.GID), s.Size, s.Mtime.Sec, s.Mtime.Nsec} {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return append(b, ']')
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *PathState) UnmarshalJSON(b []byte) error {
	var v []int64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch len(v) {
	case 0:
		*s = PathState{}
	case 8:
		*s = PathState{Exists: true, Type: uint32(v[0]), Ino: uint64(v[1]), Mode: uint32(v[2]), UID: uint32(v[3]),
			GID: uint32(v[4]), Size: v[5], Mtime: store.Timespec{Sec: v[6], Nsec: v[7]}}
	default:
		return fmt.Errorf("a path state of %d numbers", len(v))
	}
	return nil
}

// record is one line of the records file: a before-image, or the
// after-state of every changed path.
type record struct {
	Before *beforeImage `json:"before,omitempty"`
	After  []PathState  `json:"after,omitempty"`
	// Staging are the transaction's staging areas, with the after-state.
	Staging []string `json:"staging,omitempty"`
	// End marks the after-state: the write-through ended.
	End bool `json:"end,omitempty"`
	// Creates [first, last] are ops that place staged objects other than
	// directories, each done with RENAME_NOREPLACE: one that finds its
	// path taken gets a before-image line of its own before it replaces
	// what is there, so an op of the range without one made its path,
	// where nothing was (a before-image Absent). The line is written
	// before the first of them is done.
	Creates []int `json:"creates,omitempty"`
}

// keeping is Apply's state while it keeps before-images.
type keeping struct {
	k *Keeper
	f *os.File
	// By op: have, a line of its own (perhaps by an earlier run);
	// intended, in a creates line (record.Creates), with no line of its
	// own unless it found its path taken; listed, in done; lost, found
	// done by a redo without its record.
	have, intended, listed, lost []bool
	// intents: the records have creates lines, and their ops are in the
	// order of the redo log (records.before).
	intents bool
	bytes   int64
	done    []int // ops done with a record or in a creates line, in order
	ops     []store.RedoOp
	buf     []byte            // every record, as in the file
	mounts  map[string]uint64 // mount id of a directory
	dirs    map[string]int    // O_PATH descriptors of directories (lstat)
	// known is what each changed path holds after the ops so far, where
	// the ops say it without a look at the host (a rename moves an object
	// with its attributes; a removal leaves nothing); nil: look at the
	// end. redone: an earlier run did ops this one skips, and only the
	// host can say what they left.
	known  map[string]knownState
	redone bool
	areas  map[uint64]undoArea
	home   uint64 // the state directory's mount id
	// unplanned is the first op plan has not looked at; pre holds, for
	// the ops preFrom on of the last run plan looked at, the source each
	// moves.
	unplanned int
	pre       []unix.Stat_t
	preFrom   int
	srcs      map[string]bool // the sources of plan's run
}

// knownState is what a path holds after the ops so far (keeping.known),
// unless look: only the host can say.
type knownState struct {
	s    PathState
	look bool
}

type undoArea struct{ path, mountPoint string }

// startKeeping opens k's records, reading what an earlier run recorded.
func startKeeping(k *Keeper, ops []store.RedoOp) (*keeping, error) {
	if err := k.Store.MakeUndoDir(k.ID); err != nil {
		return nil, err
	}
	dir := k.Store.UndoDir(k.ID)
	n := len(ops)
	kp := &keeping{k: k, have: make([]bool, n), intended: make([]bool, n), listed: make([]bool, n), lost: make([]bool, n),
		ops: ops, mounts: map[string]uint64{}, areas: map[uint64]undoArea{}, srcs: map[string]bool{}}
	data, err := os.ReadFile(filepath.Join(dir, recordsName))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	recs, valid := parseRecords(data)
	if valid < len(data) {
		// A line a power cut left partial: its op was not done, or is
		// found done without it (Lost).
		if err := os.Truncate(filepath.Join(dir, recordsName), int64(valid)); err != nil {
			return nil, err
		}
	}
	kp.buf = append([]byte(nil), data[:valid]...)
	kp.known = make(map[string]knownState, n) // a path per op, in most write-throughs
	kp.redone = len(recs.before) > 0
	kp.intents = recs.intents
	for _, b := range recs.before {
		switch {
		case b.N >= len(ops):
			continue
		case b.intended:
			kp.intended[b.N] = true
		case kp.have[b.N]:
			continue
		default:
			kp.have[b.N] = true
			kp.bytes += b.Bytes
		}
		if b.Lost {
			kp.lost[b.N] = true
		} else {
			kp.list(b.N)
		}
	}
	kp.f, err = os.OpenFile(filepath.Join(dir, recordsName), os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the undo records of transaction %d: %w", k.ID, err)
	}
	kp.home, err = mountIDOf(dir)
	if err != nil {
		kp.f.Close()
		return nil, err
	}
	kp.areas[kp.home] = undoArea{path: dir}
	return kp, nil
}

// records is what a records file holds: the before-images by op, and the
// last after-state written.
type records struct {
	before  []beforeImage
	after   []PathState
	staging []string
	// ended says an after-state was written: the write-through ended.
	ended bool
	// intents says there were creates lines: before is then in the
	// order of the ops.
	intents bool
}

// loadRecords returns transaction id's records, whose redo ops are ops:
// those stored with the mark that it is applied, else its records file (a
// write-through not finished yet).
func loadRecords(s *store.Store, id int64, ops []store.RedoOp) (records, error) {
	data, ok, err := s.UndoRecords(id)
	if err != nil {
		return records{}, err
	}
	if !ok {
		data, err = os.ReadFile(filepath.Join(s.UndoDir(id), recordsName))
		if err != nil && !os.IsNotExist(err) {
			return records{}, err
		}
	}
	r, _ := parseRecords(data)
	return r, r.name(ops)
}

// name gives the after-state the paths it is of.
func (r *records) name(ops []store.RedoOp) error {
	var done []int
	for _, b := range r.before {
		if b.N >= len(ops) || ops[b.N].Kind != b.Kind {
			return fmt.Errorf("the before-image records do not match the redo log (op %d)", b.N)
		}
		if !b.Lost {
			done = append(done, b.N)
		}
	}
	if !r.ended {
		return nil
	}
	paths := afterPaths(ops, done, func(p string) bool { return inAreas(r.staging, p) })
	if len(paths) != len(r.after) {
		return fmt.Errorf("the after-state names %d paths, the records %d", len(r.after), len(paths))
	}
	for i := range r.after {
		r.after[i].Path = paths[i]
	}
	return nil
}

// parseRecords parses records, one JSON line each, and returns how many
// bytes of data were whole lines. An op of a creates line that has no
// line of its own is a before-image Absent (intended); when there are
// creates lines, the before-images are in the order of their ops, which
// is the order the write-through did them in.
func parseRecords(data []byte) (records, int) {
	var r records
	var creates [][]int
	valid := 0
	for len(data[valid:]) > 0 {
		line, _, ok := bytes.Cut(data[valid:], []byte("\n"))
		if !ok {
			break
		}
		var rec record
		if json.Unmarshal(line, &rec) != nil {
			break
		}
		valid += len(line) + 1
		switch {
		case rec.Before != nil:
			r.before = append(r.before, *rec.Before)
		case rec.End:
			r.after, r.staging, r.ended = rec.After, rec.Staging, true
		case len(rec.Creates) == 2:
			creates = append(creates, rec.Creates)
		}
	}
	if len(creates) == 0 {
		return r, valid
	}
	r.intents = true
	own := make(map[int]bool, len(r.before))
	for _, b := range r.before {
		own[b.N] = true
	}
	for _, c := range creates {
		for n := c[0]; n <= c[1] && n >= 0; n++ {
			if !own[n] {
				own[n] = true
				r.before = append(r.before, beforeImage{N: n, Kind: store.OpRename, Absent: true, intended: true})
			}
		}
	}
	sort.SliceStable(r.before, func(i, j int) bool { return r.before[i].N < r.before[j].N })
	return r, valid
}

func (kp *keeping) write(rec record) error {
	b, err := appendRecord(nil, rec)
	if err != nil {
		return err
	}
	return kp.writeLines(b)
}

// writeLines appends whole record lines to the records file.
func (kp *keeping) writeLines(b []byte) error {
	if _, err := kp.f.Write(b); err != nil {
		return fmt.Errorf("write the undo records of transaction %d: %w", kp.k.ID, err)
	}
	kp.buf = append(kp.buf, b...)
	return nil
}

// appendRecord appends rec's line to buf. The two lines a write-through
// of many files writes most, a create's before-image and the
// after-state, are encoded by hand (encoding/json's reflection costs
// about as much as the rest of keeping them); the bytes are those
// json.Marshal writes.
func appendRecord(buf []byte, rec record) ([]byte, error) {
	switch b := rec.Before; {
	case b != nil && rec.After == nil && rec.Staging == nil && !rec.End && b.onlyAbsent():
		buf = append(buf, `{"before":{"n":`...)
		buf = strconv.AppendInt(buf, int64(b.N), 10)
		buf = append(buf, `,"kind":"`...)
		buf = append(buf, b.Kind...)
		buf = append(buf, `","absent":true`...)
		if b.Placed != 0 {
			buf = append(buf, `,"placed":`...)
			buf = strconv.AppendUint(buf, uint64(b.Placed), 10)
		}
		return append(buf, "}}\n"...), nil
	case b == nil && rec.End:
		buf = append(buf, '{')
		if len(rec.After) > 0 {
			buf = append(buf, `"after":[`...)
			for i, a := range rec.After {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = a.appendJSON(buf)
			}
			buf = append(buf, "],"...)
		}
		if len(rec.Staging) > 0 {
			st, err := json.Marshal(rec.Staging)
			if err != nil {
				return nil, err
			}
			buf = append(buf, `"staging":`...)
			buf = append(buf, st...)
			buf = append(buf, ',')
		}
		return append(buf, `"end":true}`+"\n"...), nil
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return append(append(buf, line...), '\n'), nil
}

// onlyAbsent reports whether b says no more than that nothing was at the
// op's path (and what the op placed there).
func (b *beforeImage) onlyAbsent() bool {
	return b.Absent && isPlainKind(b.Kind) && b.Image == "" && b.MountPoint == "" && b.Ino == 0 && b.Type == 0 &&
		b.Mode == 0 && b.UID == 0 && b.GID == 0 && b.Atime == (store.Timespec{}) && b.Mtime == (store.Timespec{}) &&
		b.Xattrs == nil && b.XattrValue == nil && !b.XattrAbsent && b.Flags == 0 && !b.Lost && b.Bytes == 0
}

// isPlainKind reports whether k needs no escaping in JSON.
func isPlainKind(k store.OpKind) bool {
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (kp *keeping) staged(p string) bool {
	for _, a := range kp.k.Staging {
		if strings.HasPrefix(p, a+"/") {
			return true
		}
	}
	return false
}

// mountIDOf is the mount id of path (statx STATX_MNT_ID; the device where
// the kernel has none).
func mountIDOf(path string) (uint64, error) {
	name, done, err := sysx.ShortPath(path)
	if err != nil {
		return 0, err
	}
	defer done()
	var stx unix.Statx_t
	err = sysx.Retry(func() error {
		return unix.Statx(unix.AT_FDCWD, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx)
	})
	if err != nil {
		return 0, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		return stx.Mnt_id, nil
	}
	return unix.Mkdev(stx.Dev_major, stx.Dev_minor), nil
}

func (kp *keeping) mountOf(dir string) (uint64, error) {
	if id, ok := kp.mounts[dir]; ok {
		return id, nil
	}
	id, err := mountIDOf(dir)
	if err == nil {
		kp.mounts[dir] = id
	}
	return id, err
}

// mountPointOf is the root of the mount directory dir is on, or "" for
// the state directory's mount.
func (kp *keeping) mountPointOf(dir string) (string, error) {
	mnt, err := kp.mountOf(dir)
	if err != nil || mnt == kp.home {
		return "", err
	}
	top := dir
	for top != "/" {
		up, err := kp.mountOf(filepath.Dir(top))
		if err != nil || up != mnt {
			break
		}
		top = filepath.Dir(top)
	}
	return top, nil
}

// areaFor returns the undo area on the mount of the objects in directory
// dir, making it at the first need.
func (kp *keeping) areaFor(a *applier, dir string) (undoArea, error) {
	mnt, err := kp.mountOf(dir)
	if err != nil {
		return undoArea{}, err
	}
	if u, ok := kp.areas[mnt]; ok {
		return u, nil
	}
	top, err := kp.mountPointOf(dir)
	if err != nil {
		return undoArea{}, err
	}
	p, err := kp.k.Store.AddUndoArea(kp.k.ID, top)
	if err != nil {
		return undoArea{}, err
	}
	u := undoArea{path: p, mountPoint: top}
	kp.areas[mnt] = u
	a.syncLater(p, 0)
	a.syncLater(top, 0)
	return u, nil
}

// planMax is the most ops one creates line names, or plan keeps
// together.
const planMax = 256

// plan looks, from op from on, for a run of ops that place staged objects
// other than directories on the host, and writes one creates line
// (record.Creates) for them before the first is done: each is then done
// with RENAME_NOREPLACE (placeCreate), and needs no line of its own
// unless its path is taken. This spares the look at each path before
// its op (an lstat of a name not there searches its directory as the
// rename does again) and a record per op: a write-through that makes
// many files writes one line for up to planMax of them. An op found done
// already (its source is not the expected object), one with a line of
// its own from an earlier run, and one that moves the source of another
// op of the run end the run; an op that is not one of these is left to
// before.
//
// When the first op's path is taken, the run most likely replaces
// objects (an upgrade): each would find its path taken and write its
// record alone, so the run is kept as keepRun does instead.
func (kp *keeping) plan(a *applier, from int) error {
	kp.unplanned = from + 1
	kp.pre, kp.preFrom = kp.pre[:0], from
	if kp.places(from) {
		if _, taken, err := kp.lstat(kp.ops[from].Path); err == nil && taken {
			return kp.keepRun(a, from)
		}
	}
	clear(kp.srcs)
	last := -1
	for j := from; j < len(kp.ops) && j-from < planMax; j++ {
		op := kp.ops[j]
		if !kp.places(j) || kp.srcs[op.Src] {
			break
		}
		sst, why, err := expect(op.Src, op.Ino)
		if err != nil || why != "" || sst.Mode&unix.S_IFMT == unix.S_IFDIR {
			break
		}
		kp.pre = append(kp.pre, sst)
		kp.srcs[op.Src] = true
		last = j
	}
	if last < 0 {
		return nil
	}
	if err := kp.write(record{Creates: []int{from, last}}); err != nil {
		kp.pre = kp.pre[:0]
		return err
	}
	kp.intents = true
	for j := from; j <= last; j++ {
		kp.intended[j] = true
		kp.list(j)
	}
	kp.unplanned = last + 1
	return nil
}

// placeCreate does op n of a creates line (plan) if nothing is at its
// path: a rename with RENAME_NOREPLACE, from src to dst (the names
// applier.sys gave). created is false when the path is taken (a process
// txexec does not supervise made it after the commit validated it
// absent, or the transaction replaces it) or the file system cannot tell
// (EINVAL): then the caller keeps what is there as before any rename,
// and renames.
func (kp *keeping) placeCreate(a *applier, op store.RedoOp, src, dst string) (created bool, err error) {
	kp.track(a, op)
	err = sysx.Retry(func() error {
		return unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	})
	switch err {
	case nil:
		a.syncLater(filepath.Dir(op.Src), 0)
		a.syncLater(filepath.Dir(op.Path), 0)
		return true, nil
	case unix.EEXIST, unix.EINVAL:
		return false, nil
	}
	return false, &os.LinkError{Op: "rename", Old: op.Src, New: op.Path, Err: err}
}

// places reports whether op n places a staged object on the host and
// has no record of its own yet.
func (kp *keeping) places(n int) bool {
	op := kp.ops[n]
	return op.Kind == store.OpRename && kp.staged(op.Src) && !kp.staged(op.Path) && !kp.have[n]
}

// keepRun keeps, from op from on, the before-images of a run of ops that
// place staged objects other than directories at host paths none of
// which is another's or above another's, and writes their records in one
// write, before the first of them is done: what one of them finds at its
// path cannot be changed by the others, so each record says what its op
// replaces as well as one written just before it. An op found done
// already (its source is not the expected object), or one a record of an
// earlier run covers, ends the run; an op that is not one of these is
// left to before. A failure to keep one ends the run before it (before
// meets it again, at its own op).
func (kp *keeping) keepRun(a *applier, from int) error {
	placed := map[string]bool{} // the run's paths
	above := map[string]bool{}  // every directory above them
	var lines []byte
	var run []*beforeImage
	for j := from; j < len(kp.ops) && j-from < planMax; j++ {
		op := kp.ops[j]
		if !kp.places(j) || placed[op.Path] || above[op.Path] || below(placed, op.Path) {
			break
		}
		sst, why, err := expect(op.Src, op.Ino)
		if err != nil || why != "" || sst.Mode&unix.S_IFMT == unix.S_IFDIR {
			break
		}
		a.srcType = sst.Mode & unix.S_IFMT
		b := &beforeImage{N: j, Kind: op.Kind}
		err = kp.capture(a, op, b)
		a.closeNames()
		if err != nil {
			break
		}
		if lines, err = appendRecord(lines, record{Before: b}); err != nil {
			return err
		}
		run = append(run, b)
		kp.pre = append(kp.pre, sst)
		placed[op.Path] = true
		for d := filepath.Dir(op.Path); d != "/" && d != "." && !above[d]; d = filepath.Dir(d) {
			above[d] = true
		}
	}
	if len(run) == 0 {
		return nil
	}
	if err := kp.writeLines(lines); err != nil {
		kp.pre = kp.pre[:0]
		return err
	}
	for _, b := range run {
		kp.have[b.N] = true
		kp.list(b.N)
		kp.bytes += b.Bytes
	}
	kp.unplanned = run[len(run)-1].N + 1
	return nil
}

// below reports whether p is below one of the paths placed.
func below(placed map[string]bool, p string) bool {
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		if placed[d] {
			return true
		}
	}
	return false
}

// list adds op n to the ops done with a record.
func (kp *keeping) list(n int) {
	if !kp.listed[n] {
		kp.listed[n] = true
		kp.done = append(kp.done, n)
	}
}

// plannedSource returns, for an op of the run plan looked at last, the
// source it checked the op moves: nothing has moved it since.
func (kp *keeping) plannedSource(n int) (unix.Stat_t, bool) {
	if kp == nil {
		return unix.Stat_t{}, false
	}
	if i := n - kp.preFrom; i >= 0 && i < len(kp.pre) {
		return kp.pre[i], true
	}
	return unix.Stat_t{}, false
}

// before keeps what op n is about to replace, remove or change, unless an
// earlier run kept it. Apply's ops call it once they know the op is to be
// done, before they change anything.
func (a *applier) before(op store.RedoOp) error {
	kp := a.keep
	if kp == nil {
		return nil
	}
	if op.Kind == store.OpRmdir || op.Kind == store.OpExchange ||
		op.Kind == store.OpRename && (a.srcType == unix.S_IFDIR || !kp.staged(op.Src)) {
		// The op may move or remove a directory the cache holds.
		kp.closeDirs()
	}
	if kp.staged(op.Path) {
		return nil
	}
	kp.track(a, op)
	if kp.have[a.n] {
		return nil
	}
	b := &beforeImage{N: a.n, Kind: op.Kind}
	if err := kp.capture(a, op, b); err != nil {
		return fmt.Errorf("keep the before-image of %s: %w", op.Path, err)
	}
	if err := kp.write(record{Before: b}); err != nil {
		return err
	}
	kp.have[a.n] = true
	kp.list(a.n)
	kp.bytes += b.Bytes
	return nil
}

func (kp *keeping) capture(a *applier, op store.RedoOp, b *beforeImage) error {
	switch op.Kind {
	case store.OpExchange, store.OpLink, store.OpFsyncDir:
		return nil // nothing lost; the record says the op was done
	}
	if op.Kind == store.OpRename {
		b.Placed = a.srcType
	}
	st, ok, err := kp.lstat(op.Path)
	if err != nil {
		return err
	}
	if !ok {
		b.Absent = true
		return nil
	}
	b.Ino, b.Type, b.Mode, b.UID, b.GID = st.Ino, st.Mode&unix.S_IFMT, st.Mode&0o7777, st.Uid, st.Gid
	b.Atime = store.Timespec{Sec: st.Atim.Sec, Nsec: st.Atim.Nsec}
	b.Mtime = store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}
	isDir := b.Type == unix.S_IFDIR
	switch op.Kind {
	case store.OpRename, store.OpUnlink:
		if isDir {
			return kp.captureDir(op.Path, b)
		}
		if st.Nlink > 1 {
			// The object lives on under another name. A link kept here
			// would show in that name's link count (st_nlink), which a
			// native run leaves one lower: keep a copy with the
			// object's owner, mode and extended attributes instead.
			// Undo puts the name back as an object of its own.
			if b.Type == unix.S_IFREG {
				return kp.copy(a, op.Path, &st, b, true)
			}
			return kp.remake(a, op.Path, &st, b)
		}
		return kp.link(a, op.Path, &st, b)
	case store.OpRmdir:
		return kp.captureDir(op.Path, b)
	case store.OpCopyData:
		return kp.copy(a, op.Path, &st, b, false)
	case store.OpSetxattr, store.OpRemovexattr:
		v, err := getxattr(op.Path, op.XattrName)
		if err == unix.ENODATA {
			b.XattrAbsent = true
			return nil
		}
		b.XattrValue = v
		return err
	case store.OpAddFlags, store.OpClearFlags:
		b.Flags, err = inodeFlags(op.Path, b.Type)
		return err
	}
	return nil // setattr: the attributes above
}

// captureDir records directory p's extended attributes and inode flags
// besides its attributes: a removed directory cannot be linked, and undo
// makes it anew.
func (kp *keeping) captureDir(p string, b *beforeImage) error {
	var err error
	if b.MountPoint, err = kp.mountPointOf(filepath.Dir(p)); err != nil {
		return err
	}
	if b.Xattrs, err = xattrsOf(p); err != nil {
		return err
	}
	b.Flags, err = inodeFlags(p, unix.S_IFDIR)
	return err
}

// placeImage names b's before-image in the undo area of p's mount: the
// area, and b's Image and MountPoint, which link, copy and remake fill in.
func (kp *keeping) placeImage(a *applier, p string, b *beforeImage) (undoArea, error) {
	u, err := kp.areaFor(a, filepath.Dir(p))
	if err != nil {
		return u, err
	}
	b.Image, b.MountPoint = filepath.Join(u.path, strconv.Itoa(b.N)), u.mountPoint
	return u, nil
}

// placeNewImage is placeImage for an image made anew (copy, remake):
// made says an earlier run made it already, and it is kept.
func (kp *keeping) placeNewImage(a *applier, p string, b *beforeImage) (u undoArea, made bool, err error) {
	if u, err = kp.placeImage(a, p, b); err != nil {
		return u, false, err
	}
	_, made, err = lstat(b.Image)
	return u, made, err
}

// link hard-links the object at p (st) into its mount's undo area. One
// linked there already by an earlier run is kept.
func (kp *keeping) link(a *applier, p string, st *unix.Stat_t, b *beforeImage) error {
	u, err := kp.placeImage(a, p, b)
	if err != nil {
		return err
	}
	src, dst, err := a.sys2(p, b.Image)
	if err != nil {
		return err
	}
	err = sysx.Retry(func() error { return unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, 0) })
	if err != nil && err != unix.EEXIST {
		return &os.LinkError{Op: "link", Old: p, New: b.Image, Err: err}
	}
	if st.Nlink == 1 {
		// Once the op is done, the undo area's link alone holds it.
		b.Bytes = st.Blocks * 512
	}
	a.syncAreaLater(u)
	return nil
}

// copy copies the contents of regular file p (st), which an in-place
// write is about to overwrite, into its mount's undo area, with its times:
// a clone (FICLONE) where the file system can share the extents, else a
// copy. It is made under a temporary name and renamed, so that a crash
// never leaves a partial copy under the image's name; when durable it is
// fsynced before the write that overwrites the original. whole: the copy
// is to stand for the object itself (undo renames it into place), so it
// takes its owner, mode and extended attributes too.
func (kp *keeping) copy(a *applier, p string, st *unix.Stat_t, b *beforeImage, whole bool) error {
	u, made, err := kp.placeNewImage(a, p, b)
	if err != nil || made {
		return err
	}
	name, err := a.sys(p)
	if err != nil {
		return err
	}
	src, err := os.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOATIME, 0)
	if err != nil {
		src, err = os.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := b.Image + ".tmp"
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer dst.Close()
	if unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())) != nil {
		if _, err := io.Copy(dst, src); err != nil {
			return fmt.Errorf("copy %s to %s: %w", p, tmp, err)
		}
	}
	if whole {
		if err := copyIdentity(name, dst, st); err != nil {
			return fmt.Errorf("copy %s to %s: %w", p, tmp, err)
		}
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, tmp, []unix.Timespec{st.Atim, st.Mtim}, 0); err != nil {
		return &os.PathError{Op: "set times of", Path: tmp, Err: err}
	}
	if a.opt.Durable {
		if err := dst.Sync(); err != nil {
			return &os.PathError{Op: "fsync", Path: tmp, Err: err}
		}
	}
	if err := os.Rename(tmp, b.Image); err != nil {
		return err
	}
	var cst unix.Stat_t
	if unix.Stat(b.Image, &cst) == nil {
		b.Bytes = cst.Blocks * 512
	}
	if a.opt.Durable {
		if err := sysx.Sync([]sysx.SyncTarget{{Path: u.path, Dir: true}}); err != nil {
			return err
		}
	}
	return nil
}

// remake makes in the undo area a new object like the symlink, FIFO,
// socket or device at p (st), whose object lives on under another name:
// the same target or device number, owner, mode, times and extended
// attributes. It is made under a temporary name and renamed, as copy's.
func (kp *keeping) remake(a *applier, p string, st *unix.Stat_t, b *beforeImage) error {
	u, made, err := kp.placeNewImage(a, p, b)
	if err != nil || made {
		return err
	}
	name, err := a.sys(p)
	if err != nil {
		return err
	}
	tmp := b.Image + ".tmp"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		var target string
		if target, err = os.Readlink(name); err != nil {
			return err
		}
		err = os.Symlink(target, tmp)
	} else {
		err = unix.Mknod(tmp, st.Mode, int(st.Rdev))
	}
	if err != nil {
		return &os.PathError{Op: "make", Path: tmp, Err: err}
	}
	if err := unix.Lchown(tmp, int(st.Uid), int(st.Gid)); err != nil {
		return &os.PathError{Op: "chown", Path: tmp, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := unix.Chmod(tmp, st.Mode&0o7777); err != nil {
			return &os.PathError{Op: "chmod", Path: tmp, Err: err}
		}
	}
	xattrs, err := xattrsOf(name)
	if err != nil {
		return err
	}
	for n, v := range xattrs {
		if err := unix.Lsetxattr(tmp, n, v, 0); err != nil {
			return &os.PathError{Op: "set extended attribute " + n + " of", Path: tmp, Err: err}
		}
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, tmp, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "set times of", Path: tmp, Err: err}
	}
	if err := os.Rename(tmp, b.Image); err != nil {
		return err
	}
	a.syncAreaLater(u)
	return nil
}

// syncAreaLater has the write-through's end fsync undo area u, where an
// entry was made, and on the state directory's mount the directories
// above it, since undo/ID may be new.
func (a *applier) syncAreaLater(u undoArea) {
	a.syncLater(u.path, 0)
	if u.mountPoint == "" {
		a.syncLater(filepath.Dir(u.path), 0)
		a.syncLater(filepath.Dir(filepath.Dir(u.path)), 0)
	}
}

// copyIdentity gives dst the owner, mode and extended attributes of the
// file at name (st): owner first, since a change of owner clears the
// set-ID bits and security.capability.
func copyIdentity(name string, dst *os.File, st *unix.Stat_t) error {
	fd := int(dst.Fd())
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return err
	}
	xattrs, err := xattrsOf(name)
	if err != nil {
		return err
	}
	for n, v := range xattrs {
		if err := unix.Fsetxattr(fd, n, v, 0); err != nil {
			return fmt.Errorf("set extended attribute %s: %w", n, err)
		}
	}
	return nil
}

// xattrsOf reads every extended attribute of p (not following a final
// symlink); nil when it has none.
func xattrsOf(p string) (map[string][]byte, error) {
	names, err := listxattr(p)
	if err != nil {
		return nil, err
	}
	var xattrs map[string][]byte
	for _, n := range names {
		v, err := getxattr(p, n)
		if err == unix.ENODATA {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, err
		}
		if xattrs == nil {
			xattrs = map[string][]byte{}
		}
		xattrs[n] = v
	}
	return xattrs, nil
}

// afterPaths are the host paths the recorded ops of ops changed: each
// op's path, and the source of a rename or exchange of a host object.
func afterPaths(ops []store.RedoOp, done []int, staged func(string) bool) []string {
	seen := make(map[string]bool, len(done))
	out := make([]string, 0, len(done))
	add := func(p string) {
		if p != "" && !staged(p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, n := range done {
		op := ops[n]
		add(op.Path)
		if op.Kind == store.OpRename || op.Kind == store.OpExchange {
			add(op.Src)
		}
	}
	return out
}

// track notes what op, about to be done, leaves at the paths it names,
// and that the directories whose entries it changes must be looked at.
func (kp *keeping) track(a *applier, op store.RedoOp) {
	look := knownState{look: true}
	dirty := func(p string) {
		if _, ok := kp.known[p]; ok {
			kp.known[p] = look
		}
	}
	switch op.Kind {
	case store.OpRename:
		kp.known[op.Path] = knownState{s: stateOf(op.Path, &a.srcStat, true)}
		if !kp.staged(op.Src) {
			kp.known[op.Src] = knownState{s: PathState{Path: op.Src}}
			dirty(dirOf(op.Src))
			if a.srcType == unix.S_IFDIR {
				kp.known[op.Path] = look // its ".." changes
			}
		}
	case store.OpUnlink, store.OpRmdir:
		kp.known[op.Path] = knownState{s: PathState{Path: op.Path}}
	case store.OpExchange:
		kp.known[op.Path], kp.known[op.Src] = look, look
		dirty(dirOf(op.Src))
	default:
		kp.known[op.Path] = look
	}
	switch op.Kind {
	case store.OpRename, store.OpExchange, store.OpLink, store.OpUnlink, store.OpRmdir:
		dirty(dirOf(op.Path))
	}
}

// skipped notes that op n was skipped: in a redo, found done already,
// so a missing record was lost. An op of a creates line needs none,
// unless it found its path taken: then it kept what was there as image N
// before its record and its rename, and an image without a record is
// one a power cut lost.
func (a *applier) skipped(op store.RedoOp) error {
	kp := a.keep
	if kp == nil || !kp.k.Redo || kp.have[a.n] || kp.staged(op.Path) || op.Kind == store.OpFsyncDir {
		return nil
	}
	if kp.intended[a.n] {
		kept, err := kp.imageKept(a.n)
		if err != nil || !kept {
			return err
		}
	}
	if err := kp.write(record{Before: &beforeImage{N: a.n, Kind: op.Kind, Lost: true}}); err != nil {
		return err
	}
	kp.have[a.n] = true
	kp.lost[a.n] = true
	return nil
}

// imageKept reports whether one of the transaction's undo areas holds
// image n (keeping.link, copy, remake).
func (kp *keeping) imageKept(n int) (bool, error) {
	areas, err := kp.k.Store.UndoAreas(kp.k.ID)
	if err != nil {
		return false, err
	}
	for _, u := range areas {
		_, ok, err := lstat(filepath.Join(u.Path, strconv.Itoa(n)))
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// dirOf is filepath.Dir of p, an op's path (absolute and clean, not
// "/": CheckOps), without the copy filepath.Clean makes.
func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// StateOf is what path holds now.
func StateOf(path string) (PathState, error) {
	st, ok, err := lstat(path)
	return stateOf(path, &st, ok), err
}

func stateOf(path string, st *unix.Stat_t, ok bool) PathState {
	if !ok {
		return PathState{Path: path}
	}
	return PathState{Path: path, Exists: true, Type: st.Mode & unix.S_IFMT, Ino: st.Ino,
		Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid, Size: st.Size,
		Mtime: store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}}
}

// lstat is lstat(2) of path through a descriptor on its directory, kept
// while no op may have moved that directory (closeDirs): a write-through
// places most of its objects in a few directories, and a lookup of the
// last component only costs a fraction of the whole path's.
func (kp *keeping) lstat(path string) (unix.Stat_t, bool, error) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	fd, ok := kp.dirs[dir]
	if !ok {
		var err error
		fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			// Absent, or too long: the slow way says which.
			return lstat(path)
		}
		if kp.dirs == nil {
			kp.dirs = map[string]int{}
		}
		kp.dirs[dir] = fd
	}
	var st unix.Stat_t
	err := sysx.Retry(func() error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return lstatResult(st, path, err)
}

// closeDirs closes the descriptors lstat keeps.
func (kp *keeping) closeDirs() {
	for d, fd := range kp.dirs {
		unix.Close(fd)
		delete(kp.dirs, d)
	}
}

// finish writes the after-state of every changed path; the records file
// and the undo areas are then synced with the rest of the write-through.
func (kp *keeping) finish(a *applier) error {
	after := make([]PathState, 0, len(kp.done))
	kp.closeDirs() // the last op may have moved any
	done := make([]int, 0, len(kp.done))
	for _, n := range kp.done {
		if !kp.lost[n] {
			done = append(done, n)
		}
	}
	if kp.intents {
		sort.Ints(done) // as parseRecords orders them
	}
	for _, p := range afterPaths(kp.ops, done, kp.staged) {
		if s, ok := kp.known[p]; ok && !s.look && !kp.redone {
			after = append(after, s.s)
			continue
		}
		st, ok, err := kp.lstat(p)
		if err != nil {
			return err
		}
		after = append(after, stateOf(p, &st, ok))
	}
	kp.closeDirs()
	if err := kp.write(record{After: after, Staging: kp.k.Staging, End: true}); err != nil {
		return err
	}
	// The records file is not synced: the records become durable with
	// the mark that the transaction is applied (Keeper.Records), and a
	// redo after a power cut finds what it lost (beforeImage.Lost).
	kp.k.Records = kp.buf
	return nil
}

func (kp *keeping) close() {
	kp.closeDirs()
	if kp.f != nil {
		kp.f.Close()
	}
}

func getxattr(p, name string) ([]byte, error) {
	sname, done, err := sysx.ShortPath(p)
	if err != nil {
		return nil, err
	}
	defer done()
	buf := make([]byte, 256)
	for {
		var n int
		err := sysx.Retry(func() error {
			var err error
			n, err = unix.Lgetxattr(sname, name, buf)
			return err
		})
		if err == unix.ERANGE {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), buf[:n]...), nil
	}
}

func listxattr(p string) ([]string, error) {
	sname, done, err := sysx.ShortPath(p)
	if err != nil {
		return nil, err
	}
	defer done()
	buf := make([]byte, 1024)
	for {
		var n int
		err := sysx.Retry(func() error {
			var err error
			n, err = unix.Llistxattr(sname, buf)
			return err
		})
		switch {
		case err == unix.ERANGE:
			buf = make([]byte, 2*len(buf))
			continue
		case err == unix.ENOTSUP:
			return nil, nil
		case err != nil:
			return nil, &os.PathError{Op: "listxattr", Path: p, Err: err}
		}
		var names []string
		for _, s := range strings.Split(string(buf[:n]), "\x00") {
			if s != "" {
				names = append(names, s)
			}
		}
		return names, nil
	}
}

// inodeFlags are the inode flags of the regular file or directory p (0
// for other types and on file systems without them).
func inodeFlags(p string, typ uint32) (uint32, error) {
	if typ != unix.S_IFREG && typ != unix.S_IFDIR {
		return 0, nil
	}
	name, done, err := sysx.ShortPath(p)
	if err != nil {
		return 0, err
	}
	defer done()
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	f, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if sysx.NoInodeFlags(err) {
		return 0, nil
	}
	if err != nil {
		return 0, &os.PathError{Op: "get inode flags of", Path: p, Err: err}
	}
	return f, nil
}
