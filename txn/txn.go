package txn

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"txexec/store"
	"txexec/vfs"
)

// Manager begins, commits and aborts transactions over one store.
type Manager struct {
	Store   *store.Store
	Host    *vfs.Host
	Durable bool
	// Excludes are --exclude paths: not transactional.
	Excludes []string
}

// Transaction is one running transaction: its record in the store and its
// private view.
type Transaction struct {
	ID       int64
	StartSeq int64
	View     *vfs.Tx
	m        *Manager
}

// Begin starts a transaction for command.
func (m *Manager) Begin(command []string, cwd string) (*Transaction, error) {
	t, err := m.Store.Begin(store.TxInfo{Command: command, Cwd: cwd})
	if err != nil {
		return nil, err
	}
	v, err := vfs.NewTx(m.Host, m.Store.StagingDir(t.ID), m.Excludes)
	if err != nil {
		m.Store.Abort(t.ID, "could not create its view: "+err.Error())
		m.Store.RemoveStaging(t.ID)
		return nil, err
	}
	return &Transaction{ID: t.ID, StartSeq: t.StartSeq, View: v, m: m}, nil
}

// ErrConflict is wrapped by commit errors caused by a conflict.
var ErrConflict = errors.New("conflict")

// CommitError is a commit that did not happen, and why.
type CommitError struct {
	Conflict bool
	Err      error
}

func (e *CommitError) Error() string { return e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// Commit makes the transaction's changes durable and writes them through:
// staged data synced; then in one store transaction (serialized with every
// other committer, in this process or another) validation against what was
// committed since this transaction began and against the host, then the
// redo log and the commit record (the commit point); then write-through;
// then the record is marked applied and the staging area dropped. A failure
// before the commit point aborts with nothing changed; after it, the
// changes are applied now or by recovery.
func (t *Transaction) Commit() error {
	v := t.View
	defer v.Close()
	if err := v.Doomed(); err != nil {
		t.abort(err.Error())
		return &CommitError{Conflict: true, Err: err}
	}
	ops := v.Journal()
	if err := CheckOps(ops); err != nil {
		// A malformed op in the redo log would block recovery for good.
		err = fmt.Errorf("internal error: %w", err)
		t.abort(err.Error())
		return &CommitError{Err: err}
	}
	if t.m.Durable && len(ops) > 0 {
		if err := v.SyncStaged(); err != nil {
			t.abort(err.Error())
			return &CommitError{Err: err}
		}
	}
	reads, listed := v.ReadPaths(), v.ListedPaths()
	_, err := t.m.Store.Commit(t.ID, func(since []store.WriteSet) error {
		if err := conflictWith(reads, listed, since); err != nil {
			return err
		}
		return v.Validate()
	}, ops, v.WriteSet())
	if err != nil {
		t.abort(err.Error())
		var ce *vfs.ConflictError
		return &CommitError{Conflict: errors.As(err, &ce), Err: err}
	}
	store.Fault("txn.after-commit-point")
	if err := Apply(ops, ApplyOptions{Durable: t.m.Durable}); err != nil {
		// Committed: recovery finishes the write-through.
		return fmt.Errorf("write through transaction %d (recovery will finish it): %w", t.ID, err)
	}
	store.Fault("txn.before-mark-applied")
	if err := t.m.Store.MarkApplied(t.ID); err != nil {
		return err
	}
	return t.m.Store.RemoveStaging(t.ID)
}

// conflictWith finds a transaction committed since this one began that
// wrote a path this one read, or created or removed an entry in a
// directory this one read.
func conflictWith(reads, listed []string, since []store.WriteSet) error {
	if len(since) == 0 {
		return nil
	}
	read := make(map[string]bool, len(reads))
	for _, p := range reads {
		read[p] = true
	}
	list := make(map[string]bool, len(listed))
	for _, p := range listed {
		list[p] = true
	}
	for _, ws := range since {
		for _, g := range ws.Granules {
			if read[g.Path] {
				return &vfs.ConflictError{Path: g.Path, Reason: fmt.Sprintf("changed by transaction %d, committed after this one began", ws.TxID)}
			}
			if dir := path.Dir(g.Path); list[dir] {
				return &vfs.ConflictError{Path: dir, Reason: fmt.Sprintf("listed, and changed by transaction %d", ws.TxID)}
			}
		}
	}
	return nil
}

// Abort discards the transaction.
func (t *Transaction) Abort(reason string) error {
	t.View.Close()
	return t.abort(reason)
}

func (t *Transaction) abort(reason string) error {
	err := t.m.Store.Abort(t.ID, reason)
	if rerr := t.m.Store.RemoveStaging(t.ID); err == nil {
		err = rerr
	}
	return err
}

// Recover finishes every committed transaction whose supervisor died before
// writing it through, and aborts every running one whose supervisor died.
// It is idempotent and safe to interrupt: the redo operations check what
// is already done.
func Recover(s *store.Store, durable bool) (finished, aborted []int64, err error) {
	pending, err := s.ClaimPending(Alive)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pending {
		if err := Apply(p.Ops, ApplyOptions{Durable: durable}); err != nil {
			return finished, nil, fmt.Errorf("recover transaction %d: %w", p.ID, err)
		}
		if err := s.MarkApplied(p.ID); err != nil {
			return finished, nil, err
		}
		s.RemoveStaging(p.ID)
		finished = append(finished, p.ID)
	}
	aborted, err = s.AbortOrphans(Alive, "its supervisor died before the commit point")
	if err != nil {
		return finished, nil, err
	}
	for _, id := range aborted {
		s.RemoveStaging(id)
	}
	_, err = s.GCStaging()
	return finished, aborted, err
}

// Alive reports whether a supervisor process still runs: the pid exists and
// has the start time it had.
func Alive(o store.Owner) bool {
	start, err := ProcStart(o.Pid)
	if err != nil {
		return false
	}
	return o.Start == 0 || start == o.Start
}

// ProcStart reads a process's start time (field 22 of /proc/PID/stat).
func ProcStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}
