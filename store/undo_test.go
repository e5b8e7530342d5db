package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// applyKeeping begins, commits and marks applied a transaction that kept
// before-images holding bytes, and returns it and what retention dropped.
func applyKeeping(t *testing.T, s *Store, path string, bytes int64) (int64, []int64) {
	t.Helper()
	tx, err := s.Begin(TxInfo{Command: []string{"t"}, KeepUndo: true})
	require.NoError(t, err)
	_, err = s.Commit(tx.ID, nil, Prepared{Ops: []RedoOp{{Kind: OpUnlink, Path: path, Ino: 1}},
		Writes: []Granule{{Kind: "entry", Path: path}}})
	require.NoError(t, err)
	require.NoError(t, s.MakeUndoDir(tx.ID))
	dropped, err := s.MarkAppliedKeeping(tx.ID, bytes, []byte("records"))
	require.NoError(t, err)
	return tx.ID, dropped
}

func TestUndoRetention(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	r, err := s.Retention()
	require.NoError(t, err)
	assert.Equal(t, Retention{KeepLast: DefaultUndoKeepLast, MaxBytes: DefaultUndoMaxBytes}, r)
	require.NoError(t, s.SetRetention(Retention{KeepLast: 3, MaxBytes: 100}))

	var ids []int64
	for i := 0; i < 3; i++ {
		id, dropped := applyKeeping(t, s, "/a", 10)
		assert.Empty(t, dropped)
		ids = append(ids, id)
	}
	id4, dropped := applyKeeping(t, s, "/b", 10)
	assert.Equal(t, []int64{ids[0]}, dropped, "more than KeepLast: the oldest goes")
	id5, dropped := applyKeeping(t, s, "/c", 75)
	assert.Equal(t, []int64{ids[1]}, dropped, "more than MaxBytes together")
	u, err := s.Undo(ids[0])
	require.NoError(t, err)
	assert.Equal(t, UndoDropped, u.State)
	rec, _, err := s.Get(id5)
	require.NoError(t, err)
	assert.True(t, rec.Undo.Undoable(rec.State))
	assert.Equal(t, int64(75), rec.Undo.Bytes)

	// An undo of id5 drops id5's when it is applied.
	tx, err := s.Begin(TxInfo{KeepUndo: true})
	require.NoError(t, err)
	_, err = s.Commit(tx.ID, nil, Prepared{Ops: []RedoOp{{Kind: OpUnlink, Path: "/c", Ino: 2}}, Undoes: id5})
	require.NoError(t, err)
	dropped, err = s.MarkAppliedKeeping(tx.ID, 1, nil)
	require.NoError(t, err)
	assert.Contains(t, dropped, id5)
	u, err = s.Undo(id5)
	require.NoError(t, err)
	assert.Equal(t, tx.ID, u.UndoneBy)
	u, err = s.Undo(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, id5, u.Undoes)
	recs, ok, err := s.UndoRecords(id4)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "records", string(recs))
	_, ok, err = s.UndoRecords(id5)
	require.NoError(t, err)
	assert.False(t, ok, "dropped with its before-images")

	// Which transaction changed a path after a commit.
	rec4, _, err := s.Get(id4)
	require.NoError(t, err)
	by, err := s.ChangedAfter(rec4.Seq-1, []string{"/b", "/", "/c", "/nowhere"})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"/b": id4, "/": id4, "/c": id5, "/nowhere": 0}, by)

	// gc --all drops every one kept; GCUndo removes their directories.
	all, err := s.DropUndo(nil, true)
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[2], id4, tx.ID}, all)
	for _, id := range all {
		require.NoError(t, s.RemoveUndo(id))
	}
	gone, err := s.GCUndo()
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[0], ids[1], id5}, gone, "dropped by retention, their directories left")
	for _, id := range append(ids, id4, id5, tx.ID) {
		assert.NoDirExists(t, s.UndoDir(id))
	}
}

// TestAddUndoArea: an undo area on another mount is recorded before it is
// made, only for a committed transaction, kept when made already (a redo)
// and removed with its record.
func TestAddUndoArea(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mnt := t.TempDir()
	tx, err := s.Begin(TxInfo{KeepUndo: true})
	require.NoError(t, err)
	_, err = s.AddUndoArea(tx.ID, mnt)
	var se *StateError
	require.ErrorAs(t, err, &se, "not while running")
	_, err = s.Commit(tx.ID, nil, Prepared{})
	require.NoError(t, err)
	p, err := s.AddUndoArea(tx.ID, mnt)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(mnt, UndoAreaPrefix+s.instance+"-"+filepath.Base(s.UndoDir(tx.ID))), p)
	require.NoError(t, os.WriteFile(filepath.Join(p, "1"), nil, 0o600))
	again, err := s.AddUndoArea(tx.ID, mnt)
	require.NoError(t, err)
	assert.Equal(t, p, again)
	assert.FileExists(t, filepath.Join(p, "1"), "kept")
	areas, err := s.UndoAreas(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, []UndoArea{{Path: s.UndoDir(tx.ID)}, {Path: p, MountPoint: mnt}}, areas)
	require.NoError(t, s.RemoveUndo(tx.ID))
	assert.NoDirExists(t, p)
	areas, err = s.UndoAreas(tx.ID)
	require.NoError(t, err)
	assert.Len(t, areas, 1)
}
