package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a deterministic Now: each call is one second after the last.
type clock struct {
	mu sync.Mutex
	t  time.Time // guarded by mu
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func openT(t *testing.T, dir string, opt Options) *Store {
	t.Helper()
	s, err := Open(dir, opt)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func dead(Owner) bool { return false }

// sampleOps exercises every field of RedoOp, including an inode with the
// high bit set.
func sampleOps(n int) []RedoOp {
	ops := make([]RedoOp, n)
	for i := range ops {
		ops[i] = RedoOp{
			Kind: OpKind(fmt.Sprintf("kind%d", i%3)), Path: fmt.Sprintf("/host/p%d", i), Src: fmt.Sprintf("/staging/s%d", i),
			Ino: 1<<63 + uint64(i), Ino2: uint64(i) << 40, Attrs: AttrMode | AttrMtime, Mode: 0o4755, UID: 1<<32 - 2, GID: uint32(i),
			Atime: Timespec{Sec: -5, Nsec: 7}, Mtime: Timespec{Sec: 1_700_000_000 + int64(i), Nsec: 999_999_999},
		}
	}
	return ops
}

func TestOpenPragmas(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			s := openT(t, dir, Options{Durable: durable})

			var mode string
			require.NoError(t, s.db.QueryRow("PRAGMA journal_mode").Scan(&mode))
			assert.Equal(t, "wal", mode)
			var syncMode int
			require.NoError(t, s.db.QueryRow("PRAGMA synchronous").Scan(&syncMode))
			assert.Equal(t, map[bool]int{true: 2, false: 0}[durable], syncMode)

			for _, p := range []string{dir, filepath.Join(dir, StagingName)} {
				fi, err := os.Stat(p)
				require.NoError(t, err)
				assert.Equal(t, stagingMode(), fi.Mode().Perm(), p)
			}
			fi, err := os.Stat(filepath.Join(dir, DBName))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the history is the owner's alone")
		})
	}
}

func TestOpenRefusesNonWAL(t *testing.T) {
	// An in-memory database cannot be in WAL mode: journal_mode reads back
	// "memory", which must be an error, not a silent fallback.
	_, err := openDB("file::memory:", false)
	require.ErrorContains(t, err, "not wal")
}

func TestMigrationsIdempotent(t *testing.T) {
	dir := t.TempDir()
	names, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, names)

	// Several stores opening one fresh directory at once, then again.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(dir, Options{})
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	s := openT(t, dir, Options{})
	var n int
	require.NoError(t, s.db.QueryRow("SELECT count(*) FROM schema_migrations").Scan(&n))
	assert.Equal(t, len(names), n)
	var last int64
	require.NoError(t, s.db.QueryRow("SELECT last_seq FROM commit_counter").Scan(&last))
	assert.Zero(t, last)
}

func TestMigrationUpgradesOldDatabase(t *testing.T) {
	// A database made by the first schema, with a committed transaction
	// in it, as an older txexec left it.
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, StagingName), 0o700))
	db, err := openDB(dsn(filepath.Join(dir, DBName), false), false)
	require.NoError(t, err)
	first, err := migrations.ReadFile("migrations/0001_init.sql")
	require.NoError(t, err)
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ns INTEGER NOT NULL)`,
		string(first),
		`INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 0)`,
		`INSERT INTO tx (id, state, command, cwd, owner_pid, owner_start, start_seq, seq, begin_ns, commit_ns)
			VALUES (1, 'committed', '["old"]', '/', 1, 1, 0, 1, 0, 0)`,
		`INSERT INTO redo VALUES (1, 0, 'rename', '/a', '/s/a', 7, 0, 0, 0, 0, 0, 0, 0, 0)`,
		`UPDATE commit_counter SET last_seq = 1`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	s := openT(t, dir, Options{})
	rec, ops, err := s.Get(1)
	require.NoError(t, err)
	assert.Equal(t, []string{"old"}, rec.Command)
	assert.Equal(t, []RedoOp{{Kind: OpRename, Path: "/a", Src: "/s/a", Ino: 7}}, ops)
	assert.True(t, rec.Kept.IsZero())
	reads, err := s.Reads(1)
	require.NoError(t, err, "the read set table exists")
	assert.Empty(t, reads)
	tx, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	assert.Equal(t, int64(0), tx.StartSeq, "transaction 1 is committed but not written through")
}

// TestOpenRefusesForeignSchema: a database whose schema steps are not
// this build's (another build's step under the same number, or a step
// newer than any it knows) is refused when opened, with a message that
// says what to do, and is left as it was, instead of failing at a commit
// after the command's work is done.
func TestOpenRefusesForeignSchema(t *testing.T) {
	for name, step := range map[string]string{
		"same number, other step": `UPDATE schema_migrations SET name = '0002_something_else.sql' WHERE version = 2`,
		"newer step":              `INSERT INTO schema_migrations VALUES (999, '0999_from_the_future.sql', 0)`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Options{})
			_, err := s.db.Exec(step)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			before, err := os.ReadFile(filepath.Join(dir, DBName))
			require.NoError(t, err)

			_, err = Open(dir, Options{})
			require.ErrorIs(t, err, errForeignSchema)
			assert.ErrorContains(t, err, "another version of txexec")
			after, err := os.ReadFile(filepath.Join(dir, DBName))
			require.NoError(t, err)
			assert.Equal(t, before, after, "the database is not touched")
		})
	}
}

func TestLifecycle(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	s := openT(t, dir, Options{Now: clk.Now, Owner: Owner{Pid: 100, Start: 7}})

	tx, err := s.Begin(TxInfo{Command: []string{"make", "install"}, Cwd: "/src"})
	require.NoError(t, err)
	assert.Equal(t, int64(0), tx.StartSeq)
	fi, err := os.Stat(s.StagingDir(tx.ID))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, stagingMode(), fi.Mode().Perm())

	rec, ops, err := s.Get(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, StateRunning, rec.State)
	assert.Empty(t, ops)
	assert.Equal(t, Owner{Pid: 100, Start: 7}, rec.Owner)

	want := sampleOps(5)
	writes := []Granule{{Kind: "data", Path: "/host/p0"}, {Kind: "entry", Path: "/host/p1"}, {Kind: "data", Path: "/host/p0"}}
	seq, err := s.Commit(tx.ID, nil, Prepared{Ops: want, Writes: writes})
	require.NoError(t, err)
	assert.Equal(t, int64(1), seq)
	require.NoError(t, s.SetCommandStatus(tx.ID, 3))

	rec, ops, err = s.Get(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, StateCommitted, rec.State)
	assert.Equal(t, want, ops)
	assert.Equal(t, int64(1), rec.Seq)
	assert.Equal(t, 5, rec.OpN)
	assert.Equal(t, 2, rec.GranuleN, "duplicate granules are stored once")
	require.NotNil(t, rec.CommandStatus)
	assert.Equal(t, 3, *rec.CommandStatus)
	assert.Equal(t, []string{"make", "install"}, rec.Command)
	assert.Equal(t, "/src", rec.Cwd)
	assert.True(t, rec.Begun.Before(rec.Committed))
	assert.True(t, rec.Applied.IsZero())

	// The owner (pid 100) is alive: nothing for recovery to claim.
	pending, err := s.ClaimPending(func(o Owner) bool { return o == Owner{Pid: 100, Start: 7} })
	require.NoError(t, err)
	assert.Empty(t, pending)

	require.NoError(t, s.MarkApplied(tx.ID))
	require.NoError(t, s.MarkApplied(tx.ID), "marking applied twice is fine")
	rec, _, err = s.Get(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, StateApplied, rec.State)
	assert.True(t, rec.Committed.Before(rec.Applied))

	pending, err = s.ClaimPending(dead)
	require.NoError(t, err)
	assert.Empty(t, pending, "applied transactions are not pending")

	tx2, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), tx2.StartSeq)
	rec, _, err = s.Get(tx2.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{}, rec.Command)
	assert.Nil(t, rec.CommandStatus)
}

func TestStateTransitions(t *testing.T) {
	accept := func([]WriteSet) error { return nil }
	tests := []struct {
		name    string
		setup   func(s *Store, id int64) error
		act     func(s *Store, id int64) error
		want    State
		wantErr State // "" when act must succeed; else the StateError state
		reason  string
	}{
		{"abort running", nil, func(s *Store, id int64) error { return s.Abort(id, "exit 1") }, StateAborted, "", "exit 1"},
		{"abort aborted keeps first reason", func(s *Store, id int64) error { return s.Abort(id, "first") },
			func(s *Store, id int64) error { return s.Abort(id, "second") }, StateAborted, "", "first"},
		{"keep running", nil, func(s *Store, id int64) error { return s.Keep(id, Prepared{}) }, StateKept, "", ""},
		{"abort kept", func(s *Store, id int64) error { return s.Keep(id, Prepared{}) },
			func(s *Store, id int64) error { return s.Abort(id, "txexec abort") }, StateAborted, "", "txexec abort"},
		{"commit kept", func(s *Store, id int64) error { return s.Keep(id, Prepared{}) },
			func(s *Store, id int64) error { _, err := s.Commit(id, accept, Prepared{}); return err }, StateCommitted, "", ""},
		{"abort committed", func(s *Store, id int64) error { _, err := s.Commit(id, accept, Prepared{}); return err },
			func(s *Store, id int64) error { return s.Abort(id, "late") }, StateCommitted, StateCommitted, ""},
		{"commit aborted", func(s *Store, id int64) error { return s.Abort(id, "gone") },
			func(s *Store, id int64) error { _, err := s.Commit(id, accept, Prepared{}); return err }, StateAborted, StateAborted, "gone"},
		{"commit twice", func(s *Store, id int64) error { _, err := s.Commit(id, accept, Prepared{}); return err },
			func(s *Store, id int64) error { _, err := s.Commit(id, accept, Prepared{}); return err }, StateCommitted, StateCommitted, ""},
		{"mark running applied", nil, func(s *Store, id int64) error { return s.MarkApplied(id) }, StateRunning, StateRunning, ""},
		{"keep committed", func(s *Store, id int64) error { _, err := s.Commit(id, accept, Prepared{}); return err },
			func(s *Store, id int64) error { return s.Keep(id, Prepared{}) }, StateCommitted, StateCommitted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openT(t, t.TempDir(), Options{})
			tx, err := s.Begin(TxInfo{Command: []string{"true"}})
			require.NoError(t, err)
			if tt.setup != nil {
				require.NoError(t, tt.setup(s, tx.ID))
			}
			err = tt.act(s, tx.ID)
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				var se *StateError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, tt.wantErr, se.State)
				assert.Equal(t, tx.ID, se.ID)
			}
			rec, _, err := s.Get(tx.ID)
			require.NoError(t, err)
			assert.Equal(t, tt.want, rec.State)
			assert.Equal(t, tt.reason, rec.Reason)
		})
	}
}

func TestUnknownTransaction(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ops := map[string]func() error{
		"commit":      func() error { _, err := s.Commit(42, nil, Prepared{}); return err },
		"abort":       func() error { return s.Abort(42, "x") },
		"keep":        func() error { return s.Keep(42, Prepared{}) },
		"markApplied": func() error { return s.MarkApplied(42) },
		"status":      func() error { return s.SetCommandStatus(42, 0) },
		"get":         func() error { _, _, err := s.Get(42); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			err := op()
			require.ErrorIs(t, err, ErrNotFound)
			assert.Contains(t, err.Error(), "transaction 42")
		})
	}
}

// granules is a write set of path with every field of Granule, with
// values that need all 64 bits.
func granules(path string) []Granule {
	return []Granule{
		{Kind: "data", Path: path, Ino: 1<<64 - 1, Mtime: Timespec{Sec: -1, Nsec: 999_999_999}},
		{Kind: "entry", Path: path},
	}
}

func TestValidateSeesWriteSetsSinceStart(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	begin := func() Tx {
		tx, err := s.Begin(TxInfo{})
		require.NoError(t, err)
		return tx
	}
	commit := func(tx Tx, path string) (seq int64, saw []WriteSet) {
		seq, err := s.Commit(tx.ID, func(since []WriteSet) error { saw = since; return nil },
			Prepared{Ops: []RedoOp{{Kind: "rename", Path: path}}, Writes: granules(path)})
		require.NoError(t, err)
		require.NoError(t, s.MarkApplied(tx.ID))
		return seq, saw
	}
	ws := func(tx Tx, seq int64, path string) WriteSet {
		return WriteSet{TxID: tx.ID, Seq: seq, Granules: granules(path)}
	}

	a, b, c := begin(), begin(), begin()
	seqB, saw := commit(b, "/b")
	assert.Empty(t, saw)
	d := begin()
	assert.Equal(t, seqB, d.StartSeq)
	seqC, saw := commit(c, "/c")
	assert.Equal(t, []WriteSet{ws(b, seqB, "/b")}, saw)

	// A validation failure rolls everything back and leaves d running.
	conflict := errors.New("conflict on /c")
	_, err := s.Commit(d.ID, func(since []WriteSet) error {
		assert.Equal(t, []WriteSet{ws(c, seqC, "/c")}, since)
		return conflict
	}, Prepared{Ops: []RedoOp{{Kind: "rename", Path: "/d"}}, Writes: []Granule{{Kind: "data", Path: "/d"}},
		Reads: []ReadRecord{{Path: "/c"}}})
	require.ErrorIs(t, err, conflict)
	rec, ops, err := s.Get(d.ID)
	require.NoError(t, err)
	assert.Equal(t, StateRunning, rec.State)
	assert.Empty(t, ops)
	assert.Zero(t, rec.GranuleN)
	assert.Zero(t, rec.ReadN)

	seqA, saw := commit(a, "/a")
	assert.Equal(t, []WriteSet{ws(b, seqB, "/b"), ws(c, seqC, "/c")}, saw)
	// The failed attempt left no trace: a retry of d sees c and a only.
	_, saw = commit(d, "/d")
	assert.Equal(t, []WriteSet{ws(c, seqC, "/c"), ws(a, seqA, "/a")}, saw)

	// A commit without granules still shows up, with none.
	e, f := begin(), begin()
	seqE, err := s.Commit(e.ID, nil, Prepared{})
	require.NoError(t, err)
	require.NoError(t, s.MarkApplied(e.ID))
	_, saw = commit(f, "/f")
	assert.Equal(t, []WriteSet{{TxID: e.ID, Seq: seqE}}, saw)
}

// TestConcurrentCommitters runs committers in goroutines on two Stores
// over one database, as two txexec processes would: every commit must
// succeed (no SQLITE_BUSY surfacing), get a distinct seq, and validate
// against exactly the commits between its start and its own seq.
func TestConcurrentCommitters(t *testing.T) {
	dir := t.TempDir()
	stores := []*Store{openT(t, dir, Options{Durable: true}), openT(t, dir, Options{Durable: true})}
	const workers, commits = 8, 10

	var mu sync.Mutex
	var seqs []int64
	var wg sync.WaitGroup
	for w := range workers {
		s := stores[w%len(stores)]
		wg.Go(func() {
			for i := range commits {
				tx, err := s.Begin(TxInfo{Command: []string{"w", fmt.Sprint(w, i)}})
				if !assert.NoError(t, err) {
					return
				}
				var saw []WriteSet
				path := fmt.Sprintf("/w%d/%d", w, i)
				seq, err := s.Commit(tx.ID, func(since []WriteSet) error { saw = since; return nil },
					Prepared{Ops: sampleOps(3), Writes: []Granule{{Kind: "data", Path: path}}})
				if !assert.NoError(t, err) {
					return
				}
				// Serialized: the validation saw every commit after the
				// snapshot and before this one, in order.
				if assert.Len(t, saw, int(seq-tx.StartSeq-1)) {
					for k, ws := range saw {
						assert.Equal(t, tx.StartSeq+1+int64(k), ws.Seq)
					}
				}
				mu.Lock()
				seqs = append(seqs, seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, seqs, workers*commits)
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for i, seq := range seqs {
		assert.Equal(t, int64(i+1), seq)
	}
}

func TestClaimPending(t *testing.T) {
	dir := t.TempDir()
	crashed := openT(t, dir, Options{Owner: Owner{Pid: 10, Start: 1}})
	live := openT(t, dir, Options{Owner: Owner{Pid: 20, Start: 2}})
	var want []PendingTx
	for i := range 3 {
		tx, err := crashed.Begin(TxInfo{})
		require.NoError(t, err)
		seq, err := crashed.Commit(tx.ID, nil, Prepared{Ops: sampleOps(i + 1)})
		require.NoError(t, err)
		want = append(want, PendingTx{ID: tx.ID, Seq: seq, Ops: sampleOps(i + 1), Undo: UndoNone})
	}
	txLive, err := live.Begin(TxInfo{})
	require.NoError(t, err)
	_, err = live.Commit(txLive.ID, nil, Prepared{Ops: sampleOps(1)})
	require.NoError(t, err)

	r1 := openT(t, dir, Options{Owner: Owner{Pid: 30, Start: 3}})
	r2 := openT(t, dir, Options{Owner: Owner{Pid: 40, Start: 4}})
	aliveExcept10 := func(o Owner) bool { return o.Pid != 10 }
	got, err := r1.ClaimPending(aliveExcept10)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the dead owner's commits, in seq order; not the live one's")
	got, err = r2.ClaimPending(aliveExcept10)
	require.NoError(t, err)
	assert.Empty(t, got, "r1 claimed them and is alive")
	rec, _, err := r2.Get(want[0].ID)
	require.NoError(t, err)
	assert.Equal(t, Owner{Pid: 30, Start: 3}, rec.Owner)

	// r1 dies in turn: r2 takes over.
	got, err = r2.ClaimPending(func(o Owner) bool { return o.Pid == 20 || o.Pid == 40 })
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestAbortOrphans(t *testing.T) {
	dir := t.TempDir()
	clk := newClock()
	a := openT(t, dir, Options{Now: clk.Now, Owner: Owner{Pid: 10, Start: 1}})
	b := openT(t, dir, Options{Now: clk.Now, Owner: Owner{Pid: 10, Start: 2}}) // pid reused
	running, err := a.Begin(TxInfo{})
	require.NoError(t, err)
	kept, err := a.Begin(TxInfo{})
	require.NoError(t, err)
	require.NoError(t, a.Keep(kept.ID, Prepared{}))
	committed, err := a.Begin(TxInfo{})
	require.NoError(t, err)
	_, err = a.Commit(committed.ID, nil, Prepared{})
	require.NoError(t, err)
	otherOwner, err := b.Begin(TxInfo{})
	require.NoError(t, err)

	alive := func(o Owner) bool { return o == Owner{Pid: 10, Start: 2} }
	ids, err := b.AbortOrphans(alive, "supervisor died")
	require.NoError(t, err)
	assert.Equal(t, []int64{running.ID}, ids)
	for id, want := range map[int64]State{running.ID: StateAborted, kept.ID: StateKept,
		committed.ID: StateCommitted, otherOwner.ID: StateRunning} {
		rec, _, err := b.Get(id)
		require.NoError(t, err)
		assert.Equal(t, want, rec.State, "transaction %d", id)
	}
	rec, _, err := b.Get(running.ID)
	require.NoError(t, err)
	assert.Equal(t, "supervisor died", rec.Reason)
	assert.False(t, rec.Aborted.IsZero())

	ids, err = b.AbortOrphans(alive, "again")
	require.NoError(t, err)
	assert.Empty(t, ids)
}

func TestLog(t *testing.T) {
	clk := newClock()
	s := openT(t, t.TempDir(), Options{Now: clk.Now})
	var ids []int64
	before := clk.Now()
	for i := range 4 {
		tx, err := s.Begin(TxInfo{Command: []string{"cmd", fmt.Sprint(i)}})
		require.NoError(t, err)
		ids = append(ids, tx.ID)
	}
	_, err := s.Commit(ids[1], nil, Prepared{Ops: sampleOps(2), Writes: []Granule{{Kind: "data", Path: "/x"}}})
	require.NoError(t, err)
	require.NoError(t, s.Abort(ids[2], "exit status 1"))

	tests := []struct {
		name  string
		limit int
		want  []int64
	}{
		{"all", 0, []int64{ids[3], ids[2], ids[1], ids[0]}},
		{"negative is all", -1, []int64{ids[3], ids[2], ids[1], ids[0]}},
		{"limited", 2, []int64{ids[3], ids[2]}},
		{"more than there are", 10, []int64{ids[3], ids[2], ids[1], ids[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := s.Log(tt.limit)
			require.NoError(t, err)
			var got []int64
			for _, r := range recs {
				got = append(got, r.ID)
			}
			assert.Equal(t, tt.want, got)
		})
	}

	recs, err := s.Log(0)
	require.NoError(t, err)
	byID := map[int64]TxRecord{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	assert.Equal(t, before.Add(time.Second), byID[ids[0]].Begun, "the injected clock")
	assert.Equal(t, StateCommitted, byID[ids[1]].State)
	assert.Equal(t, 2, byID[ids[1]].OpN)
	assert.Equal(t, 1, byID[ids[1]].GranuleN)
	assert.Equal(t, int64(1), byID[ids[1]].Seq)
	assert.Equal(t, StateAborted, byID[ids[2]].State)
	assert.Equal(t, "exit status 1", byID[ids[2]].Reason)
	assert.Equal(t, []string{"cmd", "3"}, byID[ids[3]].Command)
}

func TestGCStaging(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	mk := func(final func(id int64) error) int64 {
		tx, err := s.Begin(TxInfo{})
		require.NoError(t, err)
		// Something inside, as a real staging directory would have.
		require.NoError(t, os.MkdirAll(filepath.Join(s.StagingDir(tx.ID), "d", "e"), 0o700))
		if final != nil {
			require.NoError(t, final(tx.ID))
		}
		return tx.ID
	}
	running := mk(nil)
	kept := mk(func(id int64) error { return s.Keep(id, Prepared{}) })
	committed := mk(func(id int64) error { _, err := s.Commit(id, nil, Prepared{}); return err })
	applied := mk(func(id int64) error {
		if _, err := s.Commit(id, nil, Prepared{}); err != nil {
			return err
		}
		return s.MarkApplied(id)
	})
	aborted := mk(func(id int64) error { return s.Abort(id, "x") })
	unknown := int64(9999)
	require.NoError(t, os.Mkdir(s.StagingDir(unknown), 0o700))
	stray := filepath.Join(dir, StagingName, "not-an-id")
	require.NoError(t, os.Mkdir(stray, 0o700))

	removed, err := s.GCStaging()
	require.NoError(t, err)
	assert.Equal(t, []int64{applied, aborted, unknown}, removed)
	for _, id := range []int64{running, kept, committed} {
		assert.DirExists(t, s.StagingDir(id))
	}
	for _, id := range removed {
		assert.NoDirExists(t, s.StagingDir(id))
	}
	assert.DirExists(t, stray, "names that are not ids are left alone")

	removed, err = s.GCStaging()
	require.NoError(t, err)
	assert.Empty(t, removed)

	require.NoError(t, s.RemoveStaging(running))
	require.NoError(t, s.RemoveStaging(running), "absent is fine")
	assert.NoDirExists(t, s.StagingDir(running))
}

func TestBeginReplacesStaleStaging(t *testing.T) {
	// A Begin that crashed before its COMMIT can leave staging/N behind
	// while id N is handed out again.
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	stale := filepath.Join(s.StagingDir(1), "leftover")
	require.NoError(t, os.MkdirAll(stale, 0o700))
	tx, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	require.Equal(t, int64(1), tx.ID)
	assert.NoFileExists(t, stale)
	assert.DirExists(t, s.StagingDir(1))
}

func TestBeginSnapshotIsLastWrittenThrough(t *testing.T) {
	// A transaction committed but not yet written through may be seen
	// half done: a transaction begun meanwhile must validate against it.
	tests := []struct {
		name string
		// states of the transactions committed before the new one
		// begins, in commit order (seqs 1, 2, …): applied or not.
		applied   []bool
		wantStart int64
	}{
		{"none", nil, 0},
		{"all applied", []bool{true, true, true}, 3},
		{"last pending", []bool{true, true, false}, 2},
		{"first pending", []bool{false, true, true}, 0},
		{"middle pending", []bool{true, false, true}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openT(t, t.TempDir(), Options{})
			for _, applied := range tt.applied {
				tx, err := s.Begin(TxInfo{})
				require.NoError(t, err)
				_, err = s.Commit(tx.ID, nil, Prepared{})
				require.NoError(t, err)
				if applied {
					require.NoError(t, s.MarkApplied(tx.ID))
				}
			}
			tx, err := s.Begin(TxInfo{})
			require.NoError(t, err)
			assert.Equal(t, tt.wantStart, tx.StartSeq)
		})
	}
}

// sampleReads exercises every field of ReadRecord, with values that need
// all 64 bits.
func sampleReads() []ReadRecord {
	return []ReadRecord{
		{Path: "/a/absent"},
		{Path: "/a/dir", Exists: true, Dev: 1<<63 | 5, Ino: 1<<64 - 1, Type: 0o040000, Listing: true, ListingSum: 1<<64 - 3},
		{Path: "/a/file", Exists: true, Dev: 8, Ino: 1 << 62, Type: 0o100000, Meta: true, Mode: 0o104755, UID: 1<<32 - 2, GID: 7,
			Size: 1 << 40, Mtime: Timespec{Sec: 1_700_000_000, Nsec: 999_999_999}, Ctime: Timespec{Sec: -1, Nsec: 1}},
		{Path: "/a/read", Exists: true, Dev: 8, Ino: 9, Type: 0o100000, Data: true, Mode: 0o100644, Size: 3},
	}
}

func TestKeepThenCommit(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Now: newClock().Now})
	tx, err := s.Begin(TxInfo{Command: []string{"kept"}})
	require.NoError(t, err)
	other, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	named := ReadRecord{Path: "/host/p2", Exists: true, Dev: 8, Ino: 3, Type: 0o100000, Meta: true}
	p := Prepared{Ops: sampleOps(4), Writes: granules("/a/file"), Reads: append(sampleReads(), named)}
	require.NoError(t, s.Keep(tx.ID, p))

	rec, ops, err := s.Get(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, StateKept, rec.State)
	assert.False(t, rec.Kept.IsZero())
	assert.Equal(t, p.Ops, ops, "show sees what a kept transaction would do")
	assert.Equal(t, 5, rec.ReadN)
	assert.Zero(t, rec.Seq)

	got, loaded, err := s.LoadKept(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, Tx{ID: tx.ID, StartSeq: tx.StartSeq}, got)
	assert.Equal(t, p, loaded)

	// A kept transaction's write set is not visible until it commits.
	_, err = s.Commit(other.ID, func(since []WriteSet) error {
		assert.Empty(t, since)
		return nil
	}, Prepared{})
	require.NoError(t, err)
	require.NoError(t, s.MarkApplied(other.ID))

	_, err = s.Commit(tx.ID, nil, Prepared{Ops: sampleOps(1)})
	require.Error(t, err, "a kept transaction commits what Keep stored")
	var saw []WriteSet
	seq, err := s.Commit(tx.ID, func(since []WriteSet) error { saw = since; return nil }, Prepared{})
	require.NoError(t, err)
	assert.Equal(t, []WriteSet{{TxID: other.ID, Seq: seq - 1}}, saw, "validated against what committed since it began")
	rec, ops, err = s.Get(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, StateCommitted, rec.State)
	assert.Equal(t, p.Ops, ops, "stored once")
	assert.Equal(t, 5, rec.ReadN, "the whole read set is counted")
	reads, err := s.Reads(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, []ReadRecord{named}, reads, "once committed, only the paths ops name are kept")
	pending, err := s.ClaimPending(dead)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, p.Ops, pending[0].Ops)

	later, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	_, err = s.Commit(later.ID, func(since []WriteSet) error {
		assert.Equal(t, []WriteSet{{TxID: tx.ID, Seq: seq, Granules: p.Writes}}, since)
		return nil
	}, Prepared{})
	require.NoError(t, err)

	_, _, err = s.LoadKept(tx.ID)
	var se *StateError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, StateCommitted, se.State)
	_, _, err = s.LoadKept(999)
	require.ErrorIs(t, err, ErrNotFound)
}

// TestCommitStoresReadsOfChangedPaths: a committed transaction keeps the
// read records of the paths its ops name, as the path acted on or as the
// other path (what show needs), and counts the whole read set.
func TestCommitStoresReadsOfChangedPaths(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	tx, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	reads, err := s.Reads(tx.ID)
	require.NoError(t, err)
	assert.Empty(t, reads)
	all := sampleReads()
	ops := []RedoOp{{Kind: OpRename, Path: "/a/file", Src: "/staging/s1"}, {Kind: OpRename, Path: "/a/new", Src: "/a/absent"}}
	_, err = s.Commit(tx.ID, nil, Prepared{Ops: ops, Reads: all})
	require.NoError(t, err)
	reads, err = s.Reads(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, []ReadRecord{all[0], all[2]}, reads)
	rec, _, err := s.Get(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, len(all), rec.ReadN)

	readOnly, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	_, err = s.Commit(readOnly.ID, nil, Prepared{Reads: all})
	require.NoError(t, err)
	reads, err = s.Reads(readOnly.ID)
	require.NoError(t, err)
	assert.Empty(t, reads, "nothing changed: show needs none")
	rec, _, err = s.Get(readOnly.ID)
	require.NoError(t, err)
	assert.Equal(t, len(all), rec.ReadN)
}

func TestAbortKept(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(s *Store, id int64) error
		wantErr State // "" when AbortKept must succeed
		want    State
	}{
		{"kept", func(s *Store, id int64) error { return s.Keep(id, Prepared{Ops: sampleOps(1)}) }, "", StateAborted},
		{"running belongs to its supervisor", nil, StateRunning, StateRunning},
		{"committed", func(s *Store, id int64) error { _, err := s.Commit(id, nil, Prepared{}); return err }, StateCommitted, StateCommitted},
		{"aborted", func(s *Store, id int64) error { return s.Abort(id, "first") }, "", StateAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openT(t, t.TempDir(), Options{})
			tx, err := s.Begin(TxInfo{})
			require.NoError(t, err)
			if tt.setup != nil {
				require.NoError(t, tt.setup(s, tx.ID))
			}
			err = s.AbortKept(tx.ID, "txexec abort")
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				var se *StateError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, tt.wantErr, se.State)
			}
			rec, _, err := s.Get(tx.ID)
			require.NoError(t, err)
			assert.Equal(t, tt.want, rec.State)
		})
	}
	s := openT(t, t.TempDir(), Options{})
	require.ErrorIs(t, s.AbortKept(5, "x"), ErrNotFound)
}

func TestLockCommits(t *testing.T) {
	dir := t.TempDir()
	a, b := openT(t, dir, Options{}), openT(t, dir, Options{})

	// Shared with shared.
	relA, err := a.LockCommits(LockShared)
	require.NoError(t, err)
	relB, err := b.LockCommits(LockSharedNoWait)
	require.NoError(t, err)
	relB()

	// Exclusive waits until the shared holder is done.
	var mu sync.Mutex
	released := false
	got := make(chan func())
	go func() {
		rel, err := b.LockCommits(LockExclusive)
		assert.NoError(t, err)
		mu.Lock()
		assert.True(t, released, "exclusive granted while the shared lock was held")
		mu.Unlock()
		got <- rel
	}()
	mu.Lock()
	released = true
	mu.Unlock()
	relA()
	relX := <-got

	// Exclusive keeps everyone else out.
	_, err = a.LockCommits(LockSharedNoWait)
	require.ErrorIs(t, err, ErrLockBusy)
	relX()
	relA, err = a.LockCommits(LockSharedNoWait)
	require.NoError(t, err)
	relA()
}

// BenchmarkCommit2000Ops is the SQLite part of committing a transaction
// that created 2000 files: one durable write transaction with 2000 redo
// ops, 2000 granules and 2001 read records (the commit point), then
// MarkApplied.
func BenchmarkCommit2000Ops(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Durable: true})
	require.NoError(b, err)
	defer s.Close()
	p := Prepared{Ops: sampleOps(2000)}
	for i := range 2000 {
		path := fmt.Sprintf("/bench/f%d", i)
		p.Writes = append(p.Writes, Granule{Kind: "entry", Path: path})
		p.Reads = append(p.Reads, ReadRecord{Path: path})
	}
	p.Reads = append(p.Reads, ReadRecord{Path: "/bench", Exists: true, Dev: 1, Ino: 2, Type: 0o040000})
	for b.Loop() {
		tx, err := s.Begin(TxInfo{Command: []string{"bench"}})
		require.NoError(b, err)
		_, err = s.Commit(tx.ID, func([]WriteSet) error { return nil }, p)
		require.NoError(b, err)
		require.NoError(b, s.MarkApplied(tx.ID))
	}
}

// TestStagingMode: run as root, the state and staging directories are
// searchable by everyone, so that the kernel can walk to a staged program
// that a process of another user executes; never listable by others.
func TestStagingMode(t *testing.T) {
	if os.Geteuid() == 0 {
		assert.Equal(t, os.FileMode(0o711), stagingMode())
	} else {
		assert.Equal(t, os.FileMode(0o700), stagingMode())
	}
	dir := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.Mkdir(dir, 0o700))
	s := openT(t, dir, Options{})
	_ = s
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, stagingMode(), fi.Mode().Perm(), "an existing state directory gets the search bits")
}

// TestReadCountOfOlderRecords: a transaction committed by a txexec before
// migration 0007 has no read_n, and all its read records: log counts them.
func TestReadCountOfOlderRecords(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	tx, err := s.Begin(TxInfo{})
	require.NoError(t, err)
	_, err = s.Commit(tx.ID, nil, Prepared{})
	require.NoError(t, err)
	// What an older txexec left: read_n unset, every record stored.
	_, err = s.db.Exec(`UPDATE tx SET read_n = NULL WHERE id = ?`, tx.ID)
	require.NoError(t, err)
	for _, p := range []string{"/a", "/b", "/c"} {
		_, err = s.db.Exec(`INSERT INTO readset (tx_id, path, present, dev, ino, type, meta, mode, uid, gid, size,
			mtime_sec, mtime_nsec, ctime_sec, ctime_nsec, listing, listing_sum) VALUES (?, ?, 1, 1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`, tx.ID, p)
		require.NoError(t, err)
	}
	rec, _, err := s.Get(tx.ID)
	require.NoError(t, err)
	assert.Equal(t, 3, rec.ReadN)
}

// TestRunLog: a parallel run's transactions come in the order of its
// commands, a re-run after the command's earlier attempt; other
// transactions and other runs are left out.
func TestRunLog(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	run, err := s.BeginRun(3)
	require.NoError(t, err)
	other, err := s.BeginRun(1)
	require.NoError(t, err)
	require.NotEqual(t, run, other)
	begin := func(info TxInfo) int64 {
		tx, err := s.Begin(info)
		require.NoError(t, err)
		return tx.ID
	}
	// Begun out of order, as commands running side by side are.
	third := begin(TxInfo{Command: []string{"c"}, Run: run, RunSeq: 2})
	first := begin(TxInfo{Command: []string{"a"}, Run: run, RunSeq: 0})
	begin(TxInfo{Command: []string{"unrelated"}})
	begin(TxInfo{Command: []string{"x"}, Run: other, RunSeq: 0})
	second := begin(TxInfo{Command: []string{"b"}, Run: run, RunSeq: 1})
	secondAgain := begin(TxInfo{Command: []string{"b"}, Run: run, RunSeq: 1})

	recs, err := s.RunLog(run)
	require.NoError(t, err)
	var ids []int64
	for _, r := range recs {
		ids = append(ids, r.ID)
		assert.Equal(t, run, r.Run)
	}
	assert.Equal(t, []int64{first, second, secondAgain, third}, ids)
	assert.Equal(t, []int{0, 1, 1, 2}, []int{recs[0].RunSeq, recs[1].RunSeq, recs[2].RunSeq, recs[3].RunSeq})

	all, err := s.Log(0)
	require.NoError(t, err)
	for _, r := range all {
		if r.Command[0] == "unrelated" {
			assert.Zero(t, r.Run, "a transaction of no run")
		}
	}
	_, err = s.RunLog(run + 100)
	require.ErrorIs(t, err, ErrNotFound)
}
