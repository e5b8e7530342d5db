package txn

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/proc"
	"txexec/store"
	"txexec/vfs"
)

// appendIn appends data to name under dir in tx's view, reading it first
// (an append: the read is in the read set).
func appendIn(t *testing.T, tx *Transaction, dir, name, data string) {
	t.Helper()
	cwd, err := tx.View.OpenDir(dir)
	require.NoError(t, err)
	root, err := tx.View.OpenDir("/")
	require.NoError(t, err)
	c := &vfs.Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: cwd, Root: root}
	fd, err := tx.View.Open(c, cwd, name, vfs.OpenHow{Flags: unix.O_WRONLY | unix.O_APPEND | unix.O_CREAT, Mode: 0o644})
	require.NoError(t, err)
	_, err = unix.Write(fd, []byte(data))
	require.NoError(t, err)
	unix.Close(fd)
}

// TestCommitGate: the gate is passed before the commit validates, so a
// transaction committed while it waited there is seen (a conflict, not
// a lost update); a gate that fails aborts the transaction with nothing
// written; a gated manager never takes the commit lock early.
func TestCommitGate(t *testing.T) {
	t.Run("validation after the gate", func(t *testing.T) {
		f := newDurableFixture(t)
		var gated []int64
		f.m.CommitGate = func(id int64) error {
			gated = append(gated, id)
			// An earlier command commits while this one waits.
			other := &Manager{Store: f.s, Host: f.m.Host, Durable: true}
			first, err := other.Begin([]string{"first"}, f.host)
			require.NoError(t, err)
			appendIn(t, first, f.host, "a", "first\n")
			require.NoError(t, first.Commit())
			return nil
		}
		tx, err := f.m.Begin([]string{"second"}, f.host)
		require.NoError(t, err)
		appendIn(t, tx, f.host, "a", "second\n")
		err = tx.Commit()
		var ce *CommitError
		require.ErrorAs(t, err, &ce)
		assert.True(t, ce.Conflict, "lost to the transaction committed at the gate: %v", err)
		assert.Equal(t, []int64{tx.ID}, gated)
		assert.Equal(t, "old\nfirst\n", readFile(t, filepath.Join(f.host, "a")))
	})
	t.Run("a failed gate aborts", func(t *testing.T) {
		f := newDurableFixture(t)
		f.m.CommitGate = func(int64) error { return errors.New("the driver is gone") }
		tx, err := f.m.Begin([]string{"x"}, f.host)
		require.NoError(t, err)
		appendIn(t, tx, f.host, "a", "x\n")
		err = tx.Commit()
		var ce *CommitError
		require.ErrorAs(t, err, &ce)
		assert.False(t, ce.Conflict)
		rec, _, err := f.s.Get(tx.ID)
		require.NoError(t, err)
		assert.Equal(t, store.StateAborted, rec.State)
		assert.Contains(t, rec.Reason, "ordered commit: the driver is gone")
		assert.Equal(t, "old\n", readFile(t, filepath.Join(f.host, "a")))
	})
	t.Run("no priority", func(t *testing.T) {
		f := newDurableFixture(t)
		f.m.CommitGate = func(int64) error { return nil }
		_, err := f.m.BeginPriority([]string{"x"}, f.host)
		require.Error(t, err)
	})
	t.Run("run and place recorded", func(t *testing.T) {
		f := newDurableFixture(t)
		run, err := f.s.BeginRun(2)
		require.NoError(t, err)
		f.m.Run, f.m.RunSeq = run, 1
		tx, err := f.m.Begin([]string{"x"}, f.host)
		require.NoError(t, err)
		require.NoError(t, tx.Abort("test"))
		rec, _, err := f.s.Get(tx.ID)
		require.NoError(t, err)
		assert.Equal(t, run, rec.Run)
		assert.Equal(t, 1, rec.RunSeq)
	})
}

// TestStale: a transaction that read what one committed after it began
// changed is stale; one that read nothing of it is not; neither is ended.
func TestStale(t *testing.T) {
	for _, tc := range []struct {
		name      string
		file      string // what the later transaction appends to
		wantStale bool
	}{
		{"read what was committed", "a", true},
		{"read something else", "other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDurableFixture(t)
			tx, err := f.m.Begin([]string{"failing"}, f.host)
			require.NoError(t, err)
			appendIn(t, tx, f.host, tc.file, "x\n")
			earlier, err := f.m.Begin([]string{"earlier"}, f.host)
			require.NoError(t, err)
			appendIn(t, earlier, f.host, "a", "earlier\n")
			require.NoError(t, earlier.Commit())

			conflict, err := tx.Stale()
			require.NoError(t, err)
			if tc.wantStale {
				assert.True(t, isConflict(conflict), "%v", conflict)
			} else {
				assert.NoError(t, conflict)
			}
			rec, _, err := f.s.Get(tx.ID)
			require.NoError(t, err)
			assert.Equal(t, store.StateRunning, rec.State)
			require.NoError(t, tx.Abort("failed"))
		})
	}
}
