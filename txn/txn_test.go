package txn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/store"
	"txexec/vfs"
)

func TestConflictWith(t *testing.T) {
	since := []store.WriteSet{
		{TxID: 7, Seq: 3, Granules: []store.Granule{{Kind: vfs.GranuleEntry, Path: "/d/new"}}},
		{TxID: 9, Seq: 4, Granules: []store.Granule{{Kind: vfs.GranuleEntry, Path: "/etc/passwd"}}},
		{TxID: 10, Seq: 5, Granules: []store.Granule{{Kind: vfs.GranuleMeta, Path: "/d/chmodded"}}},
		{TxID: 11, Seq: 6, Granules: []store.Granule{
			{Kind: vfs.GranuleData, Path: "/d/written"}, {Kind: vfs.GranuleMeta, Path: "/d/written"}}},
		{TxID: 12, Seq: 7, Granules: []store.Granule{{Kind: "future", Path: "/d/odd"}}},
	}
	looked := func(p string) store.ReadRecord { return store.ReadRecord{Path: p, Exists: true} }
	absent := func(p string) store.ReadRecord { return store.ReadRecord{Path: p} }
	data := func(p string) store.ReadRecord { return store.ReadRecord{Path: p, Exists: true, Data: true} }
	meta := func(p string) store.ReadRecord { return store.ReadRecord{Path: p, Exists: true, Meta: true} }
	listed := func(p string) store.ReadRecord { return store.ReadRecord{Path: p, Exists: true, Listing: true} }
	tests := []struct {
		name          string
		reads         []store.ReadRecord
		since         []store.WriteSet
		wantPath      string
		wantReason    string
		wantRewritten []string
	}{
		{"nothing committed since", []store.ReadRecord{meta("/etc/passwd"), listed("/d")}, nil, "", "", nil},
		{"disjoint", []store.ReadRecord{meta("/etc/group"), absent("/d/mine")}, since, "", "", nil},
		{"read what another wrote", []store.ReadRecord{meta("/etc/group"), data("/etc/passwd")}, since, "/etc/passwd",
			"changed by transaction 9, committed after this one began", nil},
		{"looked up what another replaced", []store.ReadRecord{looked("/etc/passwd")}, since, "/etc/passwd",
			"changed by transaction 9, committed after this one began", nil},
		{"found absent what another created", []store.ReadRecord{absent("/d/new")}, since, "/d/new",
			"changed by transaction 7, committed after this one began", nil},
		{"listed a directory another created in", []store.ReadRecord{listed("/d")}, since, "/d",
			"listed, and changed by transaction 7", nil},
		{"looked the directory up, without listing it", []store.ReadRecord{looked("/d"), absent("/d/mine")}, since, "", "", nil},
		{"read the data of what another chmodded", []store.ReadRecord{looked("/d"), data("/d/chmodded")}, since, "", "",
			[]string{"/d/chmodded"}},
		{"looked up what another chmodded", []store.ReadRecord{looked("/d/chmodded")}, since, "", "", []string{"/d/chmodded"}},
		{"read the attributes of what another chmodded", []store.ReadRecord{meta("/d/chmodded")}, since, "/d/chmodded",
			"its attributes were changed by transaction 10, committed after this one began", nil},
		{"read the data of what another wrote", []store.ReadRecord{data("/d/written")}, since, "/d/written",
			"its data was changed by transaction 11, committed after this one began", nil},
		{"read the attributes of what another wrote", []store.ReadRecord{meta("/d/written")}, since, "/d/written",
			"its data was changed by transaction 11, committed after this one began", nil},
		{"looked up what another wrote", []store.ReadRecord{looked("/d/written")}, since, "", "", []string{"/d/written"}},
		{"listed a directory whose files another changed", []store.ReadRecord{listed("/x"), listed("/d")},
			since[2:4], "", "", nil},
		{"a granule of an unknown kind is an entry", []store.ReadRecord{looked("/d/odd")}, since, "/d/odd",
			"changed by transaction 12, committed after this one began", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rewritten, err := conflictWith(tt.reads, tt.since)
			if tt.wantPath == "" {
				require.NoError(t, err)
				var got []string
				for p := range rewritten {
					got = append(got, p)
				}
				assert.ElementsMatch(t, tt.wantRewritten, got)
				return
			}
			var ce *vfs.ConflictError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.wantPath, ce.Path)
			assert.Equal(t, tt.wantReason, ce.Reason)
		})
	}
}

func TestIsConflict(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&vfs.ConflictError{Path: "/a", Reason: "x"}, true},
		{fmt.Errorf("validate: %w", &vfs.ConflictError{Path: "/a", Reason: "x"}), true},
		{errors.New("conflict on /a (changed on the host while the transaction read it)"), true},
		{errors.New("internal error: redo op 1: unknown kind"), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, isConflict(tt.err), "%v", tt.err)
	}
}

// readRecord is what a view records of host path p after reading its
// data.
func readRecord(t *testing.T, p string) store.ReadRecord {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return store.ReadRecord{Path: p, Exists: true, Dev: st.Dev, Ino: st.Ino, Type: st.Mode & unix.S_IFMT,
		Data: true, Mode: st.Mode, UID: st.Uid, GID: st.Gid, Size: st.Size,
		Mtime: store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}, Ctime: store.Timespec{Sec: st.Ctim.Sec, Nsec: st.Ctim.Nsec}}
}

// keptCopy keeps a transaction, begun in m's store, that read host/in and
// creates host/out with its content, as a view would have journaled it.
func keptCopy(t *testing.T, m *Manager, host string) int64 {
	t.Helper()
	tx, err := m.Store.Begin(store.TxInfo{Command: []string{"cp", "in", "out"}})
	require.NoError(t, err)
	staged := filepath.Join(m.Store.StagingDir(tx.ID), "1")
	writeFile(t, staged, readFile(t, filepath.Join(host, "in")))
	out := filepath.Join(host, "out")
	p := store.Prepared{
		Ops:    []store.RedoOp{{Kind: store.OpRename, Src: staged, Path: out, Ino: inoOf(t, staged)}},
		Writes: []store.Granule{{Kind: "entry", Path: out}},
		Reads:  []store.ReadRecord{readRecord(t, filepath.Join(host, "in")), {Path: out}},
	}
	require.NoError(t, m.Store.Keep(tx.ID, p))
	return tx.ID
}

func TestCommitKept(t *testing.T) {
	tests := []struct {
		name string
		// meanwhile runs between Keep and CommitKept.
		meanwhile  func(t *testing.T, m *Manager, host string)
		wantPath   string // the conflict, "" for a commit
		wantReason string
	}{
		{"nothing changed", func(*testing.T, *Manager, string) {}, "", ""},
		{"an unrelated file changed", func(t *testing.T, _ *Manager, host string) {
			writeFile(t, filepath.Join(host, "other"), "x")
		}, "", ""},
		{"the host file it read changed", func(t *testing.T, _ *Manager, host string) {
			writeFile(t, filepath.Join(host, "in"), "changed")
		}, "in", "modified by another process after it was read"},
		{"the name it found absent was created", func(t *testing.T, _ *Manager, host string) {
			writeFile(t, filepath.Join(host, "out"), "theirs")
		}, "out", "created by another process after the transaction found it absent"},
		{"a transaction committed a write to what it read", func(t *testing.T, m *Manager, host string) {
			tx, err := m.Store.Begin(store.TxInfo{})
			require.NoError(t, err)
			_, err = m.Store.Commit(tx.ID, nil, store.Prepared{Writes: []store.Granule{{Kind: "entry", Path: filepath.Join(host, "in")}}})
			require.NoError(t, err)
			require.NoError(t, m.Store.MarkApplied(tx.ID))
		}, "in", "changed by transaction 2, committed after this one began"},
		{"the host file it read was chmodded", func(t *testing.T, _ *Manager, host string) {
			require.NoError(t, os.Chmod(filepath.Join(host, "in"), 0o600))
		}, "", ""},
		{"the host file it read was written and its times restored", func(t *testing.T, _ *Manager, host string) {
			in := filepath.Join(host, "in")
			var st unix.Stat_t
			require.NoError(t, unix.Lstat(in, &st))
			writeFile(t, in, "DATA")
			require.NoError(t, unix.UtimesNano(in, []unix.Timespec{st.Atim, st.Mtim}))
		}, "in", "changed by another process after it was read, perhaps its data: its ctime moved, its mode and owner did not"},
		{"a transaction committed a chmod of what it read", func(t *testing.T, m *Manager, host string) {
			commitWrites(t, m, copyChmod(t, host))
		}, "", ""},
		{"a transaction committed a chmod of what it read, then it was replaced", func(t *testing.T, m *Manager, host string) {
			commitWrites(t, m, copyChmod(t, host))
			in := filepath.Join(host, "in")
			writeFile(t, in+".new", "data")
			require.NoError(t, os.Rename(in+".new", in))
		}, "in", "replaced by another process after it was read"},
		{"a transaction committed a chmod of what it read, then it was written", func(t *testing.T, m *Manager, host string) {
			commitWrites(t, m, copyChmod(t, host))
			writeFile(t, filepath.Join(host, "in"), "DATA")
		}, "in", "modified by another process after it was read"},
		{"a transaction committed new data to what it read", func(t *testing.T, m *Manager, host string) {
			commitWrites(t, m, store.Granule{Kind: vfs.GranuleData, Path: filepath.Join(host, "in")},
				store.Granule{Kind: vfs.GranuleMeta, Path: filepath.Join(host, "in")})
		}, "in", "its data was changed by transaction 2, committed after this one began"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := t.TempDir()
			writeFile(t, filepath.Join(host, "in"), "data")
			s, err := store.Open(t.TempDir(), store.Options{Durable: true})
			require.NoError(t, err)
			defer s.Close()
			m := &Manager{Store: s, Durable: true}
			id := keptCopy(t, m, host)
			require.Equal(t, int64(1), id)
			tt.meanwhile(t, m, host)

			err = m.CommitKept(id)
			rec, _, gerr := s.Get(id)
			require.NoError(t, gerr)
			assert.NoDirExists(t, s.StagingDir(id), "staging is dropped either way")
			if tt.wantPath == "" {
				require.NoError(t, err)
				assert.Equal(t, "data", readFile(t, filepath.Join(host, "out")))
				assert.Equal(t, store.StateApplied, rec.State)
				return
			}
			var ce *CommitError
			require.ErrorAs(t, err, &ce)
			assert.True(t, ce.Conflict)
			assert.Equal(t, fmt.Sprintf("conflict on %s (%s)", filepath.Join(host, tt.wantPath), tt.wantReason), ce.Err.Error())
			assert.Equal(t, store.StateAborted, rec.State)
			assert.Equal(t, ce.Err.Error(), rec.Reason)
		})
	}
}

// copyChmod does what the write-through of a transaction's chmod of
// host/in does — a copy with the original's times and the new mode
// replaces it — and returns the granule that transaction's write set has.
// The original keeps a name, in.orig, so that the file system does not
// reuse its inode number for a later file.
func copyChmod(t *testing.T, host string) store.Granule {
	t.Helper()
	in := filepath.Join(host, "in")
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(in, &st))
	require.NoError(t, os.Link(in, in+".orig"))
	writeFile(t, in+".copy", "data")
	require.NoError(t, os.Chmod(in+".copy", 0o600))
	require.NoError(t, unix.UtimesNano(in+".copy", []unix.Timespec{st.Atim, st.Mtim}))
	var cst unix.Stat_t
	require.NoError(t, unix.Lstat(in+".copy", &cst))
	require.NoError(t, os.Rename(in+".copy", in))
	return store.Granule{Kind: vfs.GranuleMeta, Path: in, Ino: cst.Ino, Mtime: store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}}
}

// commitWrites commits, in m's store, a transaction whose write set is gs.
func commitWrites(t *testing.T, m *Manager, gs ...store.Granule) {
	t.Helper()
	tx, err := m.Store.Begin(store.TxInfo{})
	require.NoError(t, err)
	_, err = m.Store.Commit(tx.ID, nil, store.Prepared{Writes: gs})
	require.NoError(t, err)
	require.NoError(t, m.Store.MarkApplied(tx.ID))
}

func TestCommitKeptRefusesOtherStates(t *testing.T) {
	host := t.TempDir()
	writeFile(t, filepath.Join(host, "in"), "data")
	s, err := store.Open(t.TempDir(), store.Options{})
	require.NoError(t, err)
	defer s.Close()
	m := &Manager{Store: s}

	running, err := s.Begin(store.TxInfo{})
	require.NoError(t, err)
	var se *store.StateError
	require.ErrorAs(t, m.CommitKept(running.ID), &se)
	assert.Equal(t, store.StateRunning, se.State)
	require.ErrorAs(t, m.AbortKept(running.ID, "x"), &se)
	assert.DirExists(t, s.StagingDir(running.ID), "a running transaction's staging is its supervisor's")
	require.ErrorIs(t, m.CommitKept(99), store.ErrNotFound)

	id := keptCopy(t, m, host)
	require.NoError(t, m.CommitKept(id))
	require.ErrorAs(t, m.CommitKept(id), &se)
	assert.Equal(t, store.StateApplied, se.State)

	id = keptCopy(t, m, host)
	require.NoError(t, m.AbortKept(id, "txexec abort"))
	assert.NoDirExists(t, s.StagingDir(id))
	require.ErrorAs(t, m.CommitKept(id), &se)
	assert.Equal(t, store.StateAborted, se.State)
}

func TestAutoRecoverDoesNotWaitForAPriorityTransaction(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{})
	require.NoError(t, err)
	defer s.Close()
	release, err := s.LockCommits(store.LockExclusive)
	require.NoError(t, err)
	_, _, ran, err := AutoRecover(s, false)
	require.NoError(t, err)
	assert.False(t, ran)
	release()
	_, _, ran, err = AutoRecover(s, false)
	require.NoError(t, err)
	assert.True(t, ran)
}

func TestRecoverFinishesDeadOwners(t *testing.T) {
	host := t.TempDir()
	dir := t.TempDir()
	// A supervisor that is certainly dead: pid 1 with a start time it
	// never had.
	deadOwner := store.Owner{Pid: 1, Start: 1<<64 - 1}
	crashed, err := store.Open(dir, store.Options{Owner: deadOwner})
	require.NoError(t, err)
	defer crashed.Close()

	committed, err := crashed.Begin(store.TxInfo{})
	require.NoError(t, err)
	staged := filepath.Join(crashed.StagingDir(committed.ID), "1")
	writeFile(t, staged, "redone")
	_, err = crashed.Commit(committed.ID, nil, store.Prepared{Ops: []store.RedoOp{
		{Kind: store.OpRename, Src: staged, Path: filepath.Join(host, "f"), Ino: inoOf(t, staged)}}})
	require.NoError(t, err)
	running, err := crashed.Begin(store.TxInfo{})
	require.NoError(t, err)
	kept, err := crashed.Begin(store.TxInfo{})
	require.NoError(t, err)
	require.NoError(t, crashed.Keep(kept.ID, store.Prepared{}))

	s, err := store.Open(dir, store.Options{})
	require.NoError(t, err)
	defer s.Close()
	finished, aborted, err := Recover(s, true)
	require.NoError(t, err)
	assert.Equal(t, []int64{committed.ID}, finished)
	assert.Equal(t, []int64{running.ID}, aborted)
	assert.Equal(t, "redone", readFile(t, filepath.Join(host, "f")))
	for _, id := range []int64{committed.ID, running.ID} {
		assert.NoDirExists(t, s.StagingDir(id))
	}
	assert.DirExists(t, s.StagingDir(kept.ID), "kept transactions wait for txexec commit or abort")

	finished, aborted, err = Recover(s, true)
	require.NoError(t, err)
	assert.Empty(t, finished)
	assert.Empty(t, aborted)
}

// TestRecoverReportsAStuckOp: a redo op that fails at every try stops
// recovery with one line that names the transaction, the op and its path,
// the error, and what to do.
func TestRecoverReportsAStuckOp(t *testing.T) {
	host := t.TempDir()
	dir := t.TempDir()
	crashed, err := store.Open(dir, store.Options{Owner: store.Owner{Pid: 1, Start: 1<<64 - 1}})
	require.NoError(t, err)
	defer crashed.Close()
	tx, err := crashed.Begin(store.TxInfo{})
	require.NoError(t, err)
	staged := filepath.Join(crashed.StagingDir(tx.ID), "1")
	writeFile(t, staged, "x")
	target := filepath.Join(host, "gone", "f")
	_, err = crashed.Commit(tx.ID, nil, store.Prepared{Ops: []store.RedoOp{
		{Kind: store.OpRename, Src: staged, Path: target, Ino: inoOf(t, staged)}}})
	require.NoError(t, err)

	// A recoverer that passes for dead too, so that each Recover claims
	// the transaction again as the next txexec would.
	s, err := store.Open(dir, store.Options{Owner: store.Owner{Pid: 1, Start: 1<<64 - 1}})
	require.NoError(t, err)
	defer s.Close()
	for range 2 {
		_, _, err = Recover(s, false)
		var re *RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, tx.ID, re.ID)
		assert.ErrorIs(t, err, unix.ENOENT)
		msg := err.Error()
		assert.NotContains(t, msg, "\n")
		assert.Contains(t, msg, fmt.Sprintf("transaction %d is committed", tx.ID))
		assert.Contains(t, msg, "redo op 0 (rename "+target+") failed")
		assert.Contains(t, msg, "txexec recover")
	}
	require.NoError(t, os.Mkdir(filepath.Join(host, "gone"), 0o755))
	finished, _, err := Recover(s, false)
	require.NoError(t, err, "recovery finishes once the cause is removed")
	assert.Equal(t, []int64{tx.ID}, finished)
	assert.Equal(t, "x", readFile(t, target))
}
