package txn

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/store"
)

// keepFixture is a committed transaction whose ops replace, remove,
// make and change host objects, with its staged objects in place.
type keepFixture struct {
	s        *store.Store
	id       int64
	host     string
	ops      []store.RedoOp
	replaced uint64 // the inode of the file the first op replaces
	removed  uint64 // the inode of the file the second op removes
}

func newKeepFixture(t *testing.T) keepFixture {
	t.Helper()
	s, err := store.Open(t.TempDir(), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	tx, err := s.Begin(store.TxInfo{KeepUndo: true})
	require.NoError(t, err)
	host := t.TempDir()
	area := s.StagingDir(tx.ID)
	write := func(p, data string) uint64 {
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return inoOf(t, p)
	}
	f := keepFixture{s: s, id: tx.ID, host: host}
	f.replaced = write(filepath.Join(host, "replaced"), "old\n")
	f.removed = write(filepath.Join(host, "removed"), "removed\n")
	write(filepath.Join(host, "mode"), "mode\n")
	require.NoError(t, os.Mkdir(filepath.Join(host, "dir"), 0o750))
	f.ops = []store.RedoOp{
		{Kind: store.OpRename, Src: filepath.Join(area, "a"), Path: filepath.Join(host, "replaced"),
			Ino: write(filepath.Join(area, "a"), "new\n")},
		{Kind: store.OpUnlink, Path: filepath.Join(host, "removed"), Ino: f.removed},
		{Kind: store.OpSetattr, Path: filepath.Join(host, "mode"), Ino: inoOf(t, filepath.Join(host, "mode")),
			Attrs: store.AttrMode, Mode: 0o600},
		{Kind: store.OpRmdir, Path: filepath.Join(host, "dir"), Ino: inoOf(t, filepath.Join(host, "dir"))},
		{Kind: store.OpRename, Src: filepath.Join(area, "b"), Path: filepath.Join(host, "made"),
			Ino: write(filepath.Join(area, "b"), "made\n")},
	}
	_, err = s.Commit(tx.ID, nil, store.Prepared{Ops: f.ops})
	require.NoError(t, err)
	return f
}

func (f keepFixture) apply(t *testing.T, ops []store.RedoOp) {
	t.Helper()
	k := &Keeper{Store: f.s, ID: f.id, Staging: []string{f.s.StagingDir(f.id)}}
	require.NoError(t, Apply(ops, ApplyOptions{Keep: k}))
}

// TestKeepIsIdempotent: applying any prefix of the ops with before-images
// kept, then all of them (a write-through redone after a crash), keeps
// each before-image once, and never the object an op put in place: the
// image of the replaced file is the old inode, with the old contents.
func TestKeepIsIdempotent(t *testing.T) {
	for k := 0; k <= 5; k++ {
		t.Run(string(rune('0'+k)), func(t *testing.T) {
			f := newKeepFixture(t)
			if k > 0 {
				f.apply(t, f.ops[:k])
			}
			f.apply(t, f.ops)
			recs, err := loadRecords(f.s, f.id, f.ops)
			require.NoError(t, err)
			require.True(t, recs.ended)
			var ns []int
			for _, b := range recs.before {
				ns = append(ns, b.N)
			}
			assert.Equal(t, []int{0, 1, 2, 3, 4}, ns, "one record per op")
			img := recs.before[0].Image
			assert.Equal(t, f.replaced, inoOf(t, img), "the replaced object, not the new one")
			b, err := os.ReadFile(img)
			require.NoError(t, err)
			assert.Equal(t, "old\n", string(b))
			assert.Equal(t, f.removed, inoOf(t, recs.before[1].Image))
			assert.Equal(t, uint32(0o644), recs.before[2].Mode)
			assert.Equal(t, uint32(0o750), recs.before[3].Mode)
			assert.True(t, recs.before[4].Absent)
			after := map[string]PathState{}
			for _, a := range recs.after {
				after[filepath.Base(a.Path)] = a
			}
			for _, name := range []string{"replaced", "removed", "mode", "dir", "made"} {
				now, err := StateOf(filepath.Join(f.host, name))
				require.NoError(t, err)
				assert.Equal(t, now, after[name], name)
			}
		})
	}
}

// TestPlanUndoSkipsRelatedPaths: --force leaves out every step that names
// a changed path or one above or below it.
func TestPlanUndoSkipsRelatedPaths(t *testing.T) {
	f := newKeepFixture(t)
	f.apply(t, f.ops)
	recs, err := loadRecords(f.s, f.id, f.ops)
	require.NoError(t, err)
	all, err := planUndo(f.ops, recs, nil)
	require.NoError(t, err)
	require.Len(t, all, 5)
	assert.Equal(t, "remove "+filepath.Join(f.host, "made"), all[0].desc, "in reverse order")
	some, err := planUndo(f.ops, recs, []ChangedPath{{Path: filepath.Join(f.host, "dir", "below")}, {Path: filepath.Join(f.host, "mode")}})
	require.NoError(t, err)
	var descs []string
	for _, s := range some {
		descs = append(descs, s.desc)
	}
	assert.Equal(t, []string{"remove " + filepath.Join(f.host, "made"), "put back " + filepath.Join(f.host, "removed"),
		"put back " + filepath.Join(f.host, "replaced")}, descs)
}

// TestKeepSharedObjectAsCopy: the before-image of a name whose object
// has another name is a copy with the object's contents, owner, mode and
// extended attributes, not a link: the other name's link count is what a
// native run leaves (one), and the replaced object is untouched.
func TestKeepSharedObjectAsCopy(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	tx, err := s.Begin(store.TxInfo{KeepUndo: true})
	require.NoError(t, err)
	host, area := t.TempDir(), s.StagingDir(tx.ID)
	shared, other := filepath.Join(host, "shared"), filepath.Join(host, "other")
	require.NoError(t, os.WriteFile(shared, []byte("old\n"), 0o640))
	require.NoError(t, os.Chown(shared, 1000, 1000))
	require.NoError(t, unix.Chmod(shared, 0o4750)) // after chown, which clears set-user-ID
	require.NoError(t, unix.Setxattr(shared, "user.kept", []byte("v"), 0))
	require.NoError(t, os.Link(shared, other))
	staged := filepath.Join(area, "a")
	require.NoError(t, os.WriteFile(staged, []byte("new\n"), 0o644))
	ops := []store.RedoOp{{Kind: store.OpRename, Src: staged, Path: shared, Ino: inoOf(t, staged)}}
	_, err = s.Commit(tx.ID, nil, store.Prepared{Ops: ops})
	require.NoError(t, err)

	require.NoError(t, Apply(ops, ApplyOptions{Keep: &Keeper{Store: s, ID: tx.ID, Staging: []string{area}}}))

	var st unix.Stat_t
	require.NoError(t, unix.Stat(other, &st))
	assert.Equal(t, uint64(1), uint64(st.Nlink), "the other name's link count, as natively")
	recs, err := loadRecords(s, tx.ID, ops)
	require.NoError(t, err)
	require.Len(t, recs.before, 1)
	img := recs.before[0].Image
	var ist unix.Stat_t
	require.NoError(t, unix.Stat(img, &ist))
	assert.NotEqual(t, st.Ino, ist.Ino, "a copy")
	assert.Equal(t, uint32(0o4750), ist.Mode&0o7777)
	assert.Equal(t, [2]uint32{1000, 1000}, [2]uint32{ist.Uid, ist.Gid})
	assert.Equal(t, st.Mtim, ist.Mtim)
	b, err := os.ReadFile(img)
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(b))
	v := make([]byte, 16)
	n, err := unix.Getxattr(img, "user.kept", v)
	require.NoError(t, err)
	assert.Equal(t, "v", string(v[:n]))
}

// TestKeepSharedSpecialAsNew: a FIFO or symlink that lives on under
// another name is kept as a new object of its kind with its owner, mode
// and target; the other name's link count is what a native run leaves.
func TestKeepSharedSpecialAsNew(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	tx, err := s.Begin(store.TxInfo{KeepUndo: true})
	require.NoError(t, err)
	host := t.TempDir()
	fifo, symlink := filepath.Join(host, "fifo"), filepath.Join(host, "symlink")
	require.NoError(t, unix.Mkfifo(fifo, 0o620))
	require.NoError(t, unix.Chmod(fifo, 0o620)) // whatever the umask
	require.NoError(t, os.Chown(fifo, 1000, 1000))
	require.NoError(t, os.Link(fifo, fifo+"-other"))
	require.NoError(t, os.Symlink("target", symlink))
	require.NoError(t, os.Link(symlink, symlink+"-other"))
	ops := []store.RedoOp{
		{Kind: store.OpUnlink, Path: fifo, Ino: inoOf(t, fifo)},
		{Kind: store.OpUnlink, Path: symlink, Ino: inoOf(t, symlink)},
	}
	_, err = s.Commit(tx.ID, nil, store.Prepared{Ops: ops})
	require.NoError(t, err)

	require.NoError(t, Apply(ops, ApplyOptions{Keep: &Keeper{Store: s, ID: tx.ID, Staging: []string{s.StagingDir(tx.ID)}}}))

	recs, err := loadRecords(s, tx.ID, ops)
	require.NoError(t, err)
	require.Len(t, recs.before, 2)
	for _, other := range []string{fifo + "-other", symlink + "-other"} {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(other, &st))
		assert.Equal(t, uint64(1), uint64(st.Nlink), other)
	}
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(recs.before[0].Image, &st))
	assert.Equal(t, uint32(unix.S_IFIFO|0o620), st.Mode)
	assert.Equal(t, [2]uint32{1000, 1000}, [2]uint32{st.Uid, st.Gid})
	target, err := os.Readlink(recs.before[1].Image)
	require.NoError(t, err)
	assert.Equal(t, "target", target)
}

// TestRecordEncoding checks that the records encoded by hand are the
// bytes encoding/json writes, and read back the same.
func TestRecordEncoding(t *testing.T) {
	for _, rec := range []record{
		{Before: &beforeImage{N: 0, Kind: store.OpRename, Absent: true, Placed: unix.S_IFREG}},
		{Before: &beforeImage{N: 1234, Kind: store.OpRename, Absent: true}},
		{Before: &beforeImage{N: 7, Kind: store.OpLink, Absent: true, Lost: true}},
		{Before: &beforeImage{N: 3, Kind: store.OpRename, Image: "/x/3", Ino: 9, Type: unix.S_IFREG, Mode: 0o644}},
		{After: []PathState{{Exists: true, Type: unix.S_IFREG, Ino: 5, Mode: 0o600, UID: 1, GID: 2, Size: 10,
			Mtime: store.Timespec{Sec: 1, Nsec: 2}}, {}}, Staging: []string{"/s/a", "/s/\"b\""}, End: true},
		{After: []PathState{{}}, End: true},
		{End: true},
	} {
		want, err := json.Marshal(rec)
		require.NoError(t, err)
		got, err := appendRecord([]byte("x"), rec)
		require.NoError(t, err)
		assert.Equal(t, "x"+string(want)+"\n", string(got))
		r, valid := parseRecords(got[1:])
		assert.Equal(t, len(got)-1, valid)
		if rec.Before != nil {
			require.Len(t, r.before, 1)
			assert.Equal(t, *rec.Before, r.before[0])
		}
	}
}

// TestKeepGroupEndsAtAPathPlacedAgain: the records of a run of
// placements are written together before the first is done, so an op
// that replaces what an earlier op of the run placed starts a new group
// and keeps that object, not "absent"; applied again after any prefix,
// the records are the same.
func TestKeepGroupEndsAtAPathPlacedAgain(t *testing.T) {
	for k := 0; k <= 3; k++ {
		t.Run(string(rune('0'+k)), func(t *testing.T) {
			f := newKeepFixture(t)
			area := f.s.StagingDir(f.id)
			stage := func(name string) (string, uint64) {
				p := filepath.Join(area, name)
				require.NoError(t, os.WriteFile(p, []byte(name), 0o644))
				return p, inoOf(t, p)
			}
			x, xi := stage("x")
			y, yi := stage("y")
			z, zi := stage("z")
			ops := []store.RedoOp{
				{Kind: store.OpRename, Src: x, Path: filepath.Join(f.host, "p"), Ino: xi},
				{Kind: store.OpRename, Src: y, Path: filepath.Join(f.host, "q"), Ino: yi},
				{Kind: store.OpRename, Src: z, Path: filepath.Join(f.host, "p"), Ino: zi},
			}
			if k > 0 {
				f.apply(t, ops[:k])
			}
			f.apply(t, ops)
			recs, err := loadRecords(f.s, f.id, ops)
			require.NoError(t, err)
			require.Len(t, recs.before, 3)
			assert.True(t, recs.before[0].Absent)
			assert.True(t, recs.before[1].Absent)
			assert.False(t, recs.before[2].Absent)
			assert.Equal(t, xi, recs.before[2].Ino, "the object op 0 placed")
			assert.Equal(t, xi, inoOf(t, recs.before[2].Image))
			assert.Equal(t, zi, inoOf(t, filepath.Join(f.host, "p")))
		})
	}
}
