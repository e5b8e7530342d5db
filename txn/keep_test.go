package txn

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// TestKeepCreateOverAPathPlacedAgain: a run of placements has one
// creates line, written before the first is done; an op of it that
// replaces what an earlier op of the run placed finds its path taken and
// keeps that object, not "absent"; applied again after any prefix, the
// records are the same.
func TestKeepCreateOverAPathPlacedAgain(t *testing.T) {
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

// TestRecordsOfCreates: a creates line stands for a before-image Absent
// of each of its ops that has no line of its own; the before-images are
// then in the order of their ops.
func TestRecordsOfCreates(t *testing.T) {
	data := []byte(`{"creates":[2,4]}` + "\n" +
		`{"before":{"n":3,"kind":"rename","image":"/u/3","ino":9,"type":32768}}` + "\n" +
		`{"before":{"n":1,"kind":"unlink","image":"/u/1","ino":8,"type":32768}}` + "\n")
	r, valid := parseRecords(data)
	assert.Equal(t, len(data), valid)
	require.Len(t, r.before, 4)
	var ns []int
	for _, b := range r.before {
		ns = append(ns, b.N)
	}
	assert.Equal(t, []int{1, 2, 3, 4}, ns)
	assert.Equal(t, beforeImage{N: 2, Kind: store.OpRename, Absent: true, intended: true}, r.before[1])
	assert.Equal(t, "/u/3", r.before[2].Image, "an op's own line, not the creates line")
	assert.True(t, r.before[3].Absent)
}

// stageCreates returns ops that place n new staged files at host/0 …
// host/n-1, committed as transaction f.id after the fixture's ops.
func (f keepFixture) stageCreates(t *testing.T, n int) []store.RedoOp {
	t.Helper()
	var ops []store.RedoOp
	for i := range n {
		p := filepath.Join(f.s.StagingDir(f.id), "c"+strconv.Itoa(i))
		require.NoError(t, os.WriteFile(p, []byte("c"), 0o644))
		ops = append(ops, store.RedoOp{Kind: store.OpRename, Src: p, Path: filepath.Join(f.host, strconv.Itoa(i)), Ino: inoOf(t, p)})
	}
	return ops
}

// TestKeepCreateOfATakenPath: a create finds its path taken (a process
// txexec does not supervise made it after the commit validated it
// absent): the object there is kept as any replaced one, with a record
// of its own, and undo puts it back; the other creates of its creates
// line are Absent.
func TestKeepCreateOfATakenPath(t *testing.T) {
	f := newKeepFixture(t)
	ops := f.stageCreates(t, 3)
	taken := ops[1].Path
	require.NoError(t, os.WriteFile(taken, []byte("outside\n"), 0o600))
	outside := inoOf(t, taken)

	f.apply(t, ops)

	recs, err := loadRecords(f.s, f.id, ops)
	require.NoError(t, err)
	require.True(t, recs.ended)
	require.Len(t, recs.before, 3)
	assert.True(t, recs.before[0].Absent)
	assert.True(t, recs.before[2].Absent)
	b := recs.before[1]
	assert.False(t, b.Absent)
	assert.Equal(t, outside, b.Ino)
	assert.Equal(t, outside, inoOf(t, b.Image), "the outside process's file is kept")
	assert.Equal(t, ops[1].Ino, inoOf(t, taken), "and replaced")
	steps, err := planUndo(ops, recs, nil)
	require.NoError(t, err)
	var descs []string
	for _, s := range steps {
		descs = append(descs, s.desc)
	}
	assert.Equal(t, []string{"remove " + ops[2].Path, "put back " + taken, "remove " + ops[0].Path}, descs)
	require.Len(t, recs.after, 3)
	for _, a := range recs.after {
		now, err := StateOf(a.Path)
		require.NoError(t, err)
		assert.Equal(t, now, a)
	}
}

// TestKeepCreatesRedone: a write-through of creates killed after any
// prefix and redone by recovery has the same records (no op lost: a
// create needs no record); after a power cut that lost the record of a
// create that found its path taken, the redo says that record is lost
// (its before-image is in the undo area), and the other creates are
// still Absent.
func TestKeepCreatesRedone(t *testing.T) {
	redo := func(f keepFixture, ops []store.RedoOp) records {
		k := &Keeper{Store: f.s, ID: f.id, Staging: []string{f.s.StagingDir(f.id)}, Redo: true}
		require.NoError(t, Apply(ops, ApplyOptions{Keep: k}))
		recs, err := loadRecords(f.s, f.id, ops)
		require.NoError(t, err)
		require.True(t, recs.ended)
		return recs
	}
	for k := 1; k <= 3; k++ {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			f := newKeepFixture(t)
			ops := f.stageCreates(t, 3)
			f.apply(t, ops[:k])
			recs := redo(f, ops)
			require.Len(t, recs.before, 3)
			for i, b := range recs.before {
				assert.Equal(t, i, b.N)
				assert.True(t, b.Absent)
				assert.False(t, b.Lost)
			}
			require.Len(t, recs.after, 3)
			for i, a := range recs.after {
				assert.Equal(t, ops[i].Ino, a.Ino)
			}
		})
	}
	t.Run("power cut", func(t *testing.T) {
		f := newKeepFixture(t)
		ops := f.stageCreates(t, 3)
		require.NoError(t, os.WriteFile(ops[1].Path, []byte("outside\n"), 0o600))
		f.apply(t, ops)
		file := filepath.Join(f.s.UndoDir(f.id), recordsName)
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		first, _, _ := strings.Cut(string(data), "\n")
		require.Contains(t, first, `"creates"`)
		require.NoError(t, os.WriteFile(file, []byte(first+"\n"), 0o600), "the rest not written back")

		recs := redo(f, ops)
		require.Len(t, recs.before, 3)
		assert.True(t, recs.before[0].Absent && !recs.before[0].Lost)
		assert.True(t, recs.before[1].Lost, "the record of the replace is lost")
		assert.True(t, recs.before[2].Absent && !recs.before[2].Lost)
	})
}

// TestKeepRunOfReplaces: a run of placements whose first path is taken
// (an upgrade) is kept as one write of a record per op, each saying what
// its op replaces, a path not taken included; no creates line.
func TestKeepRunOfReplaces(t *testing.T) {
	f := newKeepFixture(t)
	ops := f.stageCreates(t, 3)
	old := map[int]uint64{}
	for _, i := range []int{0, 2} {
		require.NoError(t, os.WriteFile(ops[i].Path, []byte("old\n"), 0o644))
		old[i] = inoOf(t, ops[i].Path)
	}
	f.apply(t, ops)
	data, err := os.ReadFile(filepath.Join(f.s.UndoDir(f.id), recordsName))
	require.NoError(t, err)
	assert.NotContains(t, string(data), `"creates"`)
	recs, err := loadRecords(f.s, f.id, ops)
	require.NoError(t, err)
	require.Len(t, recs.before, 3)
	for i, b := range recs.before {
		assert.Equal(t, i, b.N)
		if i == 1 {
			assert.True(t, b.Absent)
			continue
		}
		assert.Equal(t, old[i], inoOf(t, b.Image))
		assert.Equal(t, ops[i].Ino, inoOf(t, ops[i].Path))
	}
}
