package txn

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/proc"
	"txexec/store"
	"txexec/vfs"
)

// syncRecord is one fsync the commit made, with the state its transaction
// had in the store at that moment.
type syncRecord struct {
	path  string
	state store.State
}

// recordSyncs makes every fsync of sysx.Sync record itself with the state
// of transaction *id in s (running until the commit point, committed
// until marked applied), and fail with EIO when fail says so.
func recordSyncs(t *testing.T, s *store.Store, id *int64, fail func(path string) bool) func() []syncRecord {
	var mu sync.Mutex
	var got []syncRecord
	sysx.SyncHook = func(path string) error {
		rec, _, err := s.Get(*id)
		require.NoError(t, err)
		mu.Lock()
		got = append(got, syncRecord{path, rec.State})
		mu.Unlock()
		if fail != nil && fail(path) {
			return unix.EIO
		}
		return nil
	}
	t.Cleanup(func() { sysx.SyncHook = nil })
	return func() []syncRecord {
		mu.Lock()
		defer mu.Unlock()
		return append([]syncRecord(nil), got...)
	}
}

// collectSyncs makes every fsync of sysx.Sync record its path.
func collectSyncs(t *testing.T) func() []string {
	var mu sync.Mutex
	var got []string
	sysx.SyncHook = func(path string) error {
		mu.Lock()
		got = append(got, path)
		mu.Unlock()
		return nil
	}
	t.Cleanup(func() { sysx.SyncHook = nil })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// deadOwner is a supervisor that is certainly dead: pid 1 with a start
// time it never had.
var deadOwner = store.Owner{Pid: 1, Start: 1<<64 - 1}

// durableFixture is a host tree and a durable manager over a fresh store.
type durableFixture struct {
	host string
	s    *store.Store
	m    *Manager
}

func newDurableFixture(t *testing.T) *durableFixture {
	host := t.TempDir()
	writeFile(t, filepath.Join(host, "a"), "old\n")
	require.NoError(t, os.MkdirAll(filepath.Join(host, "sub", "deep"), 0o755))
	writeFile(t, filepath.Join(host, "sub", "x"), "x\n")
	// An owner that passes for dead, so that a recovery can claim what
	// it committed, as the next txexec claims what a dead one left.
	s, err := store.Open(t.TempDir(), store.Options{Durable: true, Owner: deadOwner})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	h, err := vfs.NewHost()
	require.NoError(t, err)
	return &durableFixture{host: host, s: s, m: &Manager{Store: s, Host: h, Durable: true}}
}

// change begins a transaction that rewrites a, makes d/f, moves sub/x to
// y and chmods sub: new files, a new directory, a replaced file, both
// sides of a rename and a directory changed in place.
func (f *durableFixture) change(t *testing.T) *Transaction {
	tx, err := f.m.Begin([]string{"change"}, f.host)
	require.NoError(t, err)
	cwd, err := tx.View.OpenDir(f.host)
	require.NoError(t, err)
	root, err := tx.View.OpenDir("/")
	require.NoError(t, err)
	c := &vfs.Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: cwd, Root: root}
	write := func(name string, flags uint64) {
		fd, err := tx.View.Open(c, cwd, name, vfs.OpenHow{Flags: unix.O_WRONLY | flags, Mode: 0o644})
		require.NoError(t, err)
		_, err = unix.Write(fd, []byte("new\n"))
		require.NoError(t, err)
		unix.Close(fd)
	}
	write("a", unix.O_TRUNC)
	require.NoError(t, tx.View.Mkdir(c, cwd, "d", 0o755))
	write("d/f", unix.O_CREAT|unix.O_EXCL)
	require.NoError(t, tx.View.Rename(c, cwd, "sub/x", cwd, "y", 0))
	require.NoError(t, tx.View.Chmod(c, cwd, "sub", 0o700, 0))
	return tx
}

// TestCommitSyncOrder: a durable commit fsyncs every staged object its
// redo ops take from a staging area, every area and the area's parent
// before the commit point (the transaction still running), and after the
// write-through (committed, not yet applied) every host directory a redo
// op changed, both sides of a rename, and the directory whose attributes
// it set; never syncfs.
func TestCommitSyncOrder(t *testing.T) {
	f := newDurableFixture(t)
	var id int64
	synced := recordSyncs(t, f.s, &id, nil)
	tx := f.change(t)
	id = tx.ID
	areas := tx.View.StagingAreas()
	require.NoError(t, tx.Commit())
	rec, ops, err := f.s.Get(id)
	require.NoError(t, err)
	require.Equal(t, store.StateApplied, rec.State)
	assert.Equal(t, "new\n", readFile(t, filepath.Join(f.host, "d", "f")))

	before, after := map[string]bool{}, map[string]bool{}
	for _, r := range synced() {
		switch r.state {
		case store.StateRunning:
			before[r.path] = true
		case store.StateCommitted:
			after[r.path] = true
		default:
			t.Errorf("fsync of %s with the transaction %s", r.path, r.state)
		}
	}
	staged := 0
	for _, op := range ops {
		if strings.HasPrefix(op.Src, areas[0]+"/") {
			staged++
			assert.True(t, before[op.Src], "staged %s (%s to %s) synced before the commit point", op.Src, op.Kind, op.Path)
		}
	}
	assert.Equal(t, 3, staged, "a's copy, d and d/f come from the staging area")
	for _, a := range areas {
		assert.True(t, before[a], "staging area %s synced before the commit point", a)
		assert.True(t, before[filepath.Dir(a)], "the directory holding staging area %s synced before the commit point", a)
	}
	for _, dir := range []string{f.host, filepath.Join(f.host, "d"), filepath.Join(f.host, "sub")} {
		assert.True(t, after[dir], "%s synced after the write-through", dir)
	}
	assert.False(t, after[filepath.Join(f.host, "sub", "deep")], "what no op changed is not synced")
}

// TestCommitNoDurableSyncsNothing: --no-durable makes no fsync at all.
func TestCommitNoDurableSyncsNothing(t *testing.T) {
	f := newDurableFixture(t)
	f.m.Durable = false
	var id int64
	synced := recordSyncs(t, f.s, &id, nil)
	tx := f.change(t)
	id = tx.ID
	require.NoError(t, tx.Commit())
	assert.Empty(t, synced())
}

// TestCommitSyncFailure: an fsync that fails before the commit point
// aborts the transaction, saying which fsync failed, and leaves the host
// as it was; one that fails after it leaves the transaction committed and
// not applied, its changes on the host, and recovery, which fsyncs the
// changed directories again on new descriptors, finishes it.
func TestCommitSyncFailure(t *testing.T) {
	for _, tt := range []struct {
		name string
		// fails picks the fsync that fails, given the fixture.
		fails         func(f *durableFixture, path string) bool
		wantCommitted bool
		wantInMessage string
	}{
		{"staged file", func(f *durableFixture, p string) bool { return strings.Contains(p, "/staging/") }, false, "make the staged changes durable: fsync "},
		{"host directory after the write-through", func(f *durableFixture, p string) bool { return p == f.host }, true, "fsync "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newDurableFixture(t)
			var id int64
			recordSyncs(t, f.s, &id, func(p string) bool { return tt.fails(f, p) })
			tx := f.change(t)
			id = tx.ID
			err := tx.Commit()
			require.Error(t, err)
			assert.ErrorIs(t, err, unix.EIO)
			assert.Contains(t, err.Error(), tt.wantInMessage)
			rec, _, gerr := f.s.Get(id)
			require.NoError(t, gerr)
			if !tt.wantCommitted {
				var ce *CommitError
				require.ErrorAs(t, err, &ce)
				assert.False(t, ce.Conflict)
				assert.Equal(t, store.StateAborted, rec.State)
				assert.Contains(t, rec.Reason, "input/output error")
				assert.Equal(t, "old\n", readFile(t, filepath.Join(f.host, "a")))
				assert.NoFileExists(t, filepath.Join(f.host, "y"))
				assert.NoDirExists(t, f.s.StagingDir(id))
				return
			}
			assert.NotErrorAs(t, err, new(*CommitError), "committed: not an abort")
			assert.Equal(t, store.StateCommitted, rec.State, "not applied while an fsync failed")
			assert.Equal(t, "new\n", readFile(t, filepath.Join(f.host, "a")))

			// The next txexec's recovery claims it and fsyncs again.
			synced := collectSyncs(t)
			finished, _, err := Recover(f.s, true)
			require.NoError(t, err)
			assert.Equal(t, []int64{id}, finished)
			assert.Contains(t, synced(), f.host, "the failed directory is synced again")
			rec, _, err = f.s.Get(id)
			require.NoError(t, err)
			assert.Equal(t, store.StateApplied, rec.State)
		})
	}
}

// TestApplyRedoSyncsWhatWasDone: a redo of a write-through that was done
// but not synced (a crash before its fsyncs) skips every op and still
// fsyncs the directories they changed.
func TestApplyRedoSyncsWhatWasDone(t *testing.T) {
	host, staging := t.TempDir(), t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(host, "d"), 0o755))
	writeFile(t, filepath.Join(staging, "1"), "one")
	writeFile(t, filepath.Join(host, "d", "old"), "old")
	ops := []store.RedoOp{
		{Kind: store.OpRename, Src: filepath.Join(staging, "1"), Path: filepath.Join(host, "d", "new"), Ino: inoOf(t, filepath.Join(staging, "1"))},
		{Kind: store.OpUnlink, Path: filepath.Join(host, "d", "old"), Ino: inoOf(t, filepath.Join(host, "d", "old"))},
	}
	require.NoError(t, Apply(ops, ApplyOptions{}))

	synced := collectSyncs(t)
	skipped := 0
	require.NoError(t, Apply(ops, ApplyOptions{Durable: true, Skipped: func(int, store.RedoOp, string) { skipped++ }}))
	assert.Equal(t, 2, skipped)
	assert.ElementsMatch(t, []string{staging, filepath.Join(host, "d")}, synced())
}

// TestCommitDropsDirShadows: the shadows that gave changed directories
// their sizes, which Commit removes in the background, are gone with the
// rest of the staging area whether the transaction commits or aborts
// before its commit point, and Commit returns only once they are.
func TestCommitDropsDirShadows(t *testing.T) {
	for _, commits := range []bool{true, false} {
		t.Run(map[bool]string{true: "committed", false: "aborted"}[commits], func(t *testing.T) {
			f := newDurableFixture(t)
			var id int64
			recordSyncs(t, f.s, &id, func(p string) bool { return !commits && strings.Contains(p, "/staging/") })
			tx := f.change(t)
			id = tx.ID
			cwd, err := tx.View.OpenDir(f.host)
			require.NoError(t, err)
			c := &vfs.Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: cwd, Root: cwd}
			for i := range 200 {
				fd, err := tx.View.Open(c, cwd, fmt.Sprintf("sub/new-%03d", i), vfs.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL, Mode: 0o644})
				require.NoError(t, err)
				unix.Close(fd)
			}
			_, err = tx.View.Stat(c, cwd, "sub", 0) // its shadow: the host names and 200 more
			require.NoError(t, err)
			shadows, err := filepath.Glob(filepath.Join(f.s.StagingDir(id), "dirsize-*"))
			require.NoError(t, err)
			require.NotEmpty(t, shadows, "the stat made a shadow")

			err = tx.Commit()
			rec, _, gerr := f.s.Get(id)
			require.NoError(t, gerr)
			if commits {
				require.NoError(t, err)
				assert.Equal(t, store.StateApplied, rec.State)
				assert.FileExists(t, filepath.Join(f.host, "sub", "new-199"))
			} else {
				require.ErrorIs(t, err, unix.EIO)
				assert.Equal(t, store.StateAborted, rec.State)
				assert.NoFileExists(t, filepath.Join(f.host, "sub", "new-199"))
			}
			assert.NoDirExists(t, f.s.StagingDir(id))
		})
	}
}
