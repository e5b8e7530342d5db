package store

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/sysx"
	"txexec/internal/testenv"
)

func TestInstanceNamesStateDirectory(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{16}$`), s.instance)
	again := openT(t, dir, Options{})
	assert.Equal(t, s.instance, again.instance, "made once, with the database")
	other := openT(t, t.TempDir(), Options{})
	assert.NotEqual(t, s.instance, other.instance, "another state directory, another name")
}

func TestStagingAreas(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mnt := t.TempDir() // stands for another mount's root
	begin := func() int64 {
		tx, err := s.Begin(TxInfo{})
		require.NoError(t, err)
		return tx.ID
	}
	id := begin()

	area, err := s.AddStagingArea(id, mnt)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(mnt, AreaPrefix+s.instance+"-"+strconv.FormatInt(id, 10)), area)
	fi, err := os.Stat(area)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, stagingMode(), fi.Mode().Perm())
	require.NoError(t, os.WriteFile(filepath.Join(area, "1"), []byte("staged\n"), 0o600))

	areas, err := s.StagingAreas(id)
	require.NoError(t, err)
	assert.Equal(t, []string{s.StagingDir(id), area}, areas, "the state directory's first")

	_, err = s.AddStagingArea(id, mnt)
	assert.ErrorIs(t, err, os.ErrExist, "a directory already there is never adopted")
	_, err = s.AddStagingArea(id, "relative/mnt")
	assert.Error(t, err)
	_, err = s.AddStagingArea(9999, mnt)
	assert.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, s.Abort(id, "x"))
	_, err = s.AddStagingArea(id, t.TempDir())
	var se *StateError
	assert.ErrorAs(t, err, &se, "only a running transaction gets an area")
	require.NoError(t, s.RemoveStaging(id))
	assert.NoDirExists(t, area)
	assert.NoDirExists(t, s.StagingDir(id))
	areas, err = s.StagingAreas(id)
	require.NoError(t, err)
	assert.Equal(t, []string{s.StagingDir(id)}, areas, "removed areas are forgotten")
	require.NoError(t, s.RemoveStaging(id), "twice is fine")
}

func TestGCStagingAreas(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	mnt := t.TempDir()
	mk := func(final func(id int64) error) (int64, string) {
		tx, err := s.Begin(TxInfo{})
		require.NoError(t, err)
		area, err := s.AddStagingArea(tx.ID, mnt)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(area, "d", "e"), 0o700))
		if final != nil {
			require.NoError(t, final(tx.ID))
		}
		return tx.ID, area
	}
	commit := func(id int64) error { _, err := s.Commit(id, nil, Prepared{}); return err }
	running, runningArea := mk(nil)
	kept, keptArea := mk(func(id int64) error { return s.Keep(id, Prepared{}) })
	committed, committedArea := mk(commit)
	applied, appliedArea := mk(func(id int64) error {
		if err := commit(id); err != nil {
			return err
		}
		return s.MarkApplied(id)
	})
	aborted, abortedArea := mk(func(id int64) error { return s.Abort(id, "x") })
	// Recorded, but the crash came before its mkdir.
	unmade, unmadeArea := mk(func(id int64) error { return s.Abort(id, "x") })
	require.NoError(t, os.RemoveAll(unmadeArea))
	// Their staging/ID is gone already: GCStaging finds them by their
	// areas alone.
	for _, id := range []int64{applied, aborted, unmade} {
		require.NoError(t, os.RemoveAll(s.StagingDir(id)))
	}

	removed, err := s.GCStaging()
	require.NoError(t, err)
	assert.Equal(t, []int64{applied, aborted, unmade}, removed)
	for _, a := range []string{runningArea, keptArea, committedArea} {
		assert.DirExists(t, a)
	}
	for _, a := range []string{appliedArea, abortedArea} {
		assert.NoDirExists(t, a)
	}
	for _, id := range []int64{running, kept, committed} {
		areas, err := s.StagingAreas(id)
		require.NoError(t, err)
		assert.Len(t, areas, 2, "transaction %d keeps its area", id)
	}
	var rows int
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM staging_area`).Scan(&rows))
	assert.Equal(t, 3, rows, "only the live transactions' areas are recorded")

	removed, err = s.GCStaging()
	require.NoError(t, err)
	assert.Empty(t, removed)
}

// TestFreeStaging: FreeStaging empties every staging directory of a
// transaction, immutable objects included, keeps the directories and
// their records, and writes nothing to the database; Orphans lists the
// running transactions of dead owners without aborting them.
func TestFreeStaging(t *testing.T) {
	dead := Owner{Pid: 1, Start: 1<<64 - 1}
	s := openT(t, t.TempDir(), Options{Owner: dead})
	tx, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	other, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	area, err := s.AddStagingArea(tx.ID, t.TempDir())
	require.NoError(t, err)
	for _, dir := range []string{s.StagingDir(tx.ID), area, s.StagingDir(other.ID)} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "1"), []byte("staged\n"), 0o600))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "2"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "2", "3"), []byte("staged\n"), 0o600))
	}
	testenv.AddInodeFlags(t, filepath.Join(s.StagingDir(tx.ID), "1"), FlagImmutable)
	walBefore, _ := os.Stat(filepath.Join(s.dir, DBName+"-wal"))

	alive := func(o Owner) bool { return o != dead }
	ids, err := s.Orphans(alive)
	require.NoError(t, err)
	assert.Equal(t, []int64{tx.ID, other.ID}, ids)
	require.NoError(t, s.FreeStaging(tx.ID))
	for _, dir := range []string{s.StagingDir(tx.ID), area} {
		left, err := os.ReadDir(dir)
		require.NoError(t, err, "the directory stays")
		assert.Empty(t, left)
	}
	left, err := os.ReadDir(s.StagingDir(other.ID))
	require.NoError(t, err)
	assert.Len(t, left, 2, "another transaction's staging is untouched")
	areas, err := s.StagingAreas(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{s.StagingDir(tx.ID), area}, areas, "the records stay")
	walAfter, _ := os.Stat(filepath.Join(s.dir, DBName+"-wal"))
	if walBefore != nil && walAfter != nil {
		assert.Equal(t, walBefore.ModTime(), walAfter.ModTime(), "nothing written to the store")
	}
	rec, _, err := s.Get(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, StateRunning, rec.State, "freeing is not aborting")
	require.NoError(t, s.FreeStaging(tx.ID), "again: nothing to free")
}

// TestRemoveAreaSyncsMountRoot: a durable store fsyncs the directory that
// held a staging area it removed (a mount root), so that after a power
// loss no area is left that no record names; --no-durable does not.
func TestRemoveAreaSyncsMountRoot(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			s := openT(t, t.TempDir(), Options{Durable: durable})
			tx, err := s.Begin(TxInfo{})
			require.NoError(t, err)
			mnt := t.TempDir()
			_, err = s.AddStagingArea(tx.ID, mnt)
			require.NoError(t, err)
			require.NoError(t, s.Abort(tx.ID, "x"))
			var synced []string
			sysx.SyncHook = func(p string) error { synced = append(synced, p); return nil }
			t.Cleanup(func() { sysx.SyncHook = nil })
			require.NoError(t, s.RemoveStaging(tx.ID))
			if durable {
				assert.Equal(t, []string{mnt}, synced)
			} else {
				assert.Empty(t, synced)
			}
			left, err := os.ReadDir(mnt)
			require.NoError(t, err)
			assert.Empty(t, left)
		})
	}
}

// TestOpenSyncsTheStateDirectoryItMakes: a durable store made in a new
// directory fsyncs the parent of every directory it made (the state
// directory's entry, its parents', staging/'s), so that a power cut after
// its first commits cannot drop the whole store; an existing one, or
// --no-durable, syncs none.
func TestOpenSyncsTheStateDirectoryItMakes(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "a", "state")
			// Sync runs its fsyncs from several goroutines.
			var mu sync.Mutex
			var synced []string
			sysx.SyncHook = func(p string) error {
				mu.Lock()
				defer mu.Unlock()
				synced = append(synced, p)
				return nil
			}
			t.Cleanup(func() { sysx.SyncHook = nil })
			s := openT(t, dir, Options{Durable: durable})
			mu.Lock()
			made := synced
			synced = nil
			mu.Unlock()
			require.NoError(t, s.Close())
			openT(t, dir, Options{Durable: durable})
			if !durable {
				assert.Empty(t, made)
				return
			}
			assert.ElementsMatch(t, []string{base, filepath.Join(base, "a"), dir}, made)
			mu.Lock()
			defer mu.Unlock()
			assert.Empty(t, synced, "reopened: nothing made, nothing synced")
		})
	}
}
