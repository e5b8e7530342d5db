package txn

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"txexec/fastlookup"
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
	// Outputs are the files the command writes through inherited
	// descriptors (vfs.Tx.SetOutputs).
	Outputs []vfs.FileID
	// Run and RunSeq record transactions as command RunSeq of txexec
	// parallel run Run (store.TxInfo); 0 otherwise.
	Run    int64
	RunSeq int
	// CommitGate, when set, orders commits (txexec parallel): Commit
	// calls it once the transaction is prepared, before it takes the
	// commit lock and validates, and goes on when it returns, which is
	// when every transaction to commit before it has settled; so the
	// validation sees all of them. An error aborts the transaction.
	CommitGate func(id int64) error
	// KeepUndo makes the transactions it begins keep before-images at
	// write-through, for txexec undo (--undo=keep).
	KeepUndo bool
	// FastLookups gives every transaction it begins a fast-lookup tree
	// (--fast-lookups, docs/fastpath.md), disabled until the caller
	// enables it.
	FastLookups bool
}

// DefaultPriorityAfterN is how many conflicts a command may lose before
// its next run takes the commit lock early (BeginPriority), so that it
// cannot lose again: the starvation bound of docs/semantics.md §3.
const DefaultPriorityAfterN = 3

// Transaction is one running transaction: its record in the store and its
// private view.
type Transaction struct {
	ID       int64
	StartSeq int64
	View     *vfs.Tx
	// FastLookups is the view's fast-lookup tree (Manager.FastLookups),
	// nil without; the caller closes it once the tree of processes is
	// gone.
	FastLookups *fastlookup.Tree
	m           *Manager
	// shadowsGone waits until the view's directory-size shadows, which
	// Commit removes in the background, are gone (nil: none are being
	// removed); settle calls it before the staging goes.
	shadowsGone func()
	// release gives up the exclusive commit lock a transaction begun by
	// BeginPriority holds; nil otherwise.
	release func()
}

// Begin starts a transaction for command.
func (m *Manager) Begin(command []string, cwd string) (*Transaction, error) {
	t, err := m.Store.Begin(store.TxInfo{Command: command, Cwd: cwd, Run: m.Run, RunSeq: m.RunSeq, KeepUndo: m.KeepUndo})
	if err != nil {
		return nil, err
	}
	// The state directory is txexec's own: what it holds changes under
	// every transaction (the database, other transactions' staging), and
	// a transaction that reads it (a `du /var/lib`, a backup) must neither
	// see its own staging nor conflict with the store's writes.
	excludes := append([]string(nil), m.Excludes...)
	if dir, err := filepath.EvalSymlinks(m.Store.Dir()); err == nil {
		excludes = append(excludes, dir)
	}
	var tree *fastlookup.Tree
	if m.FastLookups {
		tree, err = fastlookup.NewTree()
		if err != nil {
			m.Store.Abort(t.ID, "could not create its fast-lookup tree: "+err.Error())
			m.Store.RemoveStaging(t.ID)
			return nil, fmt.Errorf("fast lookups: %w", err)
		}
	}
	v, err := vfs.NewTx(m.Host, m.Store.StagingDir(t.ID), vfs.TxOptions{
		Excludes:    excludes,
		NewArea:     func(mountPoint string) (string, error) { return m.Store.AddStagingArea(t.ID, mountPoint) },
		FastLookups: tree,
	})
	if err != nil {
		if tree != nil {
			tree.Close()
		}
		m.Store.Abort(t.ID, "could not create its view: "+err.Error())
		m.Store.RemoveStaging(t.ID)
		return nil, err
	}
	v.SetOutputs(m.Outputs)
	return &Transaction{ID: t.ID, StartSeq: t.StartSeq, View: v, FastLookups: tree, m: m}, nil
}

// BeginPriority starts a transaction that takes the commit lock early: it
// waits until every committer in flight (in any process) has written its
// transaction through, then holds the store's commit lock exclusively
// until it commits or aborts. No other transaction can commit meanwhile,
// so its validation against the write sets committed since it began
// always passes; it can still lose to a host change by a process txexec
// does not supervise, or by its own doom. Others keep running and wait at
// their commit. For a command that lost DefaultPriorityAfterN times.
//
// A transaction whose commits are ordered (CommitGate) never takes it: it
// would hold the lock while waiting for an earlier transaction, which
// needs the lock to commit.
func (m *Manager) BeginPriority(command []string, cwd string) (*Transaction, error) {
	if m.CommitGate != nil {
		return nil, errors.New("a transaction committed in order cannot take the commit lock early")
	}
	release, err := m.Store.LockCommits(store.LockExclusive)
	if err != nil {
		return nil, err
	}
	// Whatever a dead supervisor left committed is in its snapshot too.
	if _, _, err := recoverLocked(m.Store, m.Durable); err != nil {
		release()
		return nil, err
	}
	t, err := m.Begin(command, cwd)
	if err != nil {
		release()
		return nil, err
	}
	t.release = release
	return t, nil
}

// Priority reports whether t holds the commit lock (BeginPriority).
func (t *Transaction) Priority() bool { return t.release != nil }

func (t *Transaction) releaseLock() {
	if t.release != nil {
		t.release()
		t.release = nil
	}
}

// ErrConflict is wrapped by commit errors caused by a conflict.
var ErrConflict = errors.New("conflict")

// CommitError is a commit that did not happen, and why. Err is what a
// user reads after "transaction N aborted: ": for a conflict the
// *vfs.ConflictError itself ("conflict on PATH (why)").
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
// redo log, write set, read set and the commit record (the commit point);
// then write-through; then the record is marked applied and the staging
// area dropped. A failure before the commit point aborts with nothing
// changed; after it, the changes are applied now or by recovery.
//
// No process is in the view any more, so the shadows that gave changed
// directories their sizes (no part of the journal) serve nothing: they
// are removed in the background from the start, beside the syncs,
// validation, records and write-through, rather than link by link in the
// staging area's removal at the end (17,848 links for man1 under dpkg).
func (t *Transaction) Commit() error {
	v := t.View
	defer t.releaseLock()
	defer v.Close()
	t.shadowsGone = v.DropDirShadows()
	defer t.settle()
	p, err := t.prepare()
	if err != nil {
		return err
	}
	if gate := t.m.CommitGate; gate != nil {
		if err := gate(t.ID); err != nil {
			err = fmt.Errorf("ordered commit: %w", err)
			t.abort(err.Error())
			return &CommitError{Err: err}
		}
	}
	abort := func(_ int64, reason string) error { return t.abort(reason) }
	err = t.m.commit(t.ID, p, p, validateReads(p, v.Validate), t.Priority(), abort, t.settle)
	var ce *CommitError
	if !errors.As(err, &ce) {
		// Committed, even if its write-through failed (recovery
		// finishes it): what it made on the host at once stays.
		v.KeepHostEffects()
	}
	return err
}

// Stale reports, as a conflict error, whether what the transaction read
// was changed since it began: by transactions committed meanwhile (by
// the rules of its commit's validation) or on the host. It neither
// commits nor ends the transaction. Under ordered commit (CommitGate) a
// failed command's transaction asks this before it aborts: a failure on
// a state an earlier command has since changed is not what running the
// commands one after another gives, and the command is run again.
func (t *Transaction) Stale() (conflict, err error) {
	since, err := t.m.Store.CommittedSince(t.ID)
	if err != nil {
		return nil, err
	}
	rewritten, conflict := conflictWith(t.View.ReadSet(), since)
	if conflict == nil {
		conflict = t.View.Validate(rewritten)
	}
	if conflict != nil && !isConflict(conflict) {
		// Doomed for another reason (an unsupported call): the
		// failure stands.
		return nil, nil
	}
	return conflict, nil
}

// Keep ends the transaction without committing it: its redo ops, write set
// and read set (with what it observed of the host) are stored and its
// staging area kept, for txexec commit ID (CommitKept, which re-validates)
// or txexec abort ID (AbortKept). A doomed transaction is aborted instead.
func (t *Transaction) Keep() error {
	defer t.releaseLock()
	defer t.View.Close()
	p, err := t.prepare()
	if err != nil {
		return err
	}
	if err := t.m.Store.Keep(t.ID, p); err != nil {
		t.abort("could not keep it: " + err.Error())
		return &CommitError{Err: err}
	}
	t.View.KeepHostEffects()
	return nil
}

// prepare checks that the transaction can still commit and collects what
// its commit stores, with its staged data synced when durable. On failure
// it aborts the transaction and returns a *CommitError.
func (t *Transaction) prepare() (store.Prepared, error) {
	v := t.View
	if err := v.Doomed(); err != nil {
		t.abort(err.Error())
		return store.Prepared{}, &CommitError{Conflict: isConflict(err), Err: err}
	}
	ops, err := v.CommitJournal()
	if err != nil {
		t.abort(err.Error())
		return store.Prepared{}, &CommitError{Err: err}
	}
	if err := CheckOps(ops); err != nil {
		// A malformed op in the redo log would block recovery for good.
		err = fmt.Errorf("internal error: %w", err)
		t.abort(err.Error())
		return store.Prepared{}, &CommitError{Err: err}
	}
	if t.m.Durable && len(ops) > 0 {
		if err := SyncStaged(ops, v.StagingAreas()); err != nil {
			t.abort(err.Error())
			return store.Prepared{}, &CommitError{Err: err}
		}
	}
	return store.Prepared{Ops: ops, Writes: v.WriteSet(), Reads: v.ReadSet()}, nil
}

// CommitKept commits kept transaction id exactly as Commit commits a live
// one, validating the read set Keep stored against the write sets
// committed since id began and against the host. A conflict aborts it. A
// transaction that is not kept is a *store.StateError.
func (m *Manager) CommitKept(id int64) error {
	release, err := m.Store.LockCommits(store.LockShared)
	if err != nil {
		return err
	}
	defer release()
	_, p, err := m.Store.LoadKept(id)
	if err != nil {
		return err
	}
	if m.Durable && len(p.Ops) > 0 {
		// Kept by a txexec --no-durable, perhaps.
		areas, err := m.Store.StagingAreas(id)
		if err == nil {
			err = SyncStaged(p.Ops, areas)
		}
		if err != nil {
			m.abortKept(id, err.Error())
			return &CommitError{Err: err}
		}
	}
	return m.commit(id, p, store.Prepared{}, validateReads(p, func(rewritten map[string][]store.Granule) error {
		return vfs.ValidateReadSet(p.Reads, rewritten)
	}), true, m.abortKept, nil)
}

// AbortKept drops kept transaction id and its staging area. A transaction
// that is not kept is a *store.StateError.
func (m *Manager) AbortKept(id int64, reason string) error {
	if err := m.Store.AbortKept(id, reason); err != nil {
		return err
	}
	return m.Store.RemoveStaging(id)
}

// validateReads is the validation at the commit point of a transaction
// that did p: its read set against the write sets committed since it
// began (conflictWith), then against the host (host, given the paths
// whose objects those transactions changed), then Preflight.
func validateReads(p store.Prepared, host func(rewritten map[string][]store.Granule) error) func(since []store.WriteSet) error {
	return func(since []store.WriteSet) error {
		rewritten, conflict := conflictWith(p.Reads, since)
		if conflict == nil {
			conflict = host(rewritten)
		}
		if conflict == nil {
			conflict = Preflight(p.Ops)
		}
		return conflict
	}
}

// settle waits until the shadows Commit removes in the background are
// gone: before anything removes the staging area, and before Commit
// returns.
func (t *Transaction) settle() {
	if t.shadowsGone != nil {
		t.shadowsGone()
		t.shadowsGone = nil
	}
}

// abort aborts the transaction (Manager.abort) once the background
// removal of its shadows settled.
func (t *Transaction) abort(reason string) error {
	t.settle()
	return t.m.abort(t.ID, reason)
}

// commit is the commit protocol after preparation, shared by live and kept
// transactions and undo: p is what the transaction did, stored what
// store.Commit stores (p, or nothing for a kept transaction whose p is
// stored already); validate is the validation at the commit point, given
// the write sets committed since the transaction began. locked says the
// caller holds the commit lock already. abort aborts id when it cannot
// commit (Manager.abort for a live transaction, abortKept for a kept
// one). settle, if set, is called before the staging area is removed
// (Transaction.settle).
func (m *Manager) commit(id int64, p, stored store.Prepared, validate func(since []store.WriteSet) error, locked bool, abort func(id int64, reason string) error, settle func()) error {
	if !locked {
		release, err := m.Store.LockCommits(store.LockShared)
		if err != nil {
			abort(id, err.Error())
			return &CommitError{Err: err}
		}
		defer release()
	}
	var conflict error
	_, err := m.Store.Commit(id, func(since []store.WriteSet) error {
		conflict = validate(since)
		return conflict
	}, stored)
	if err != nil {
		var se *store.StateError
		if errors.As(err, &se) {
			// Not ours to abort: committed or aborted by someone else.
			return &CommitError{Err: err}
		}
		ce := &CommitError{Err: err}
		if conflict != nil && errors.Is(err, conflict) {
			ce = &CommitError{Conflict: isConflict(conflict), Err: conflict}
		}
		abort(id, ce.Err.Error())
		return ce
	}
	store.Fault("txn.after-commit-point")
	// Whoever began it chose (Store.Begin): a kept transaction, too.
	u, err := m.Store.Undo(id)
	if err == nil {
		err = writeThrough(m.Store, id, p.Ops, m.Durable, u.State == store.UndoKeep, false)
	}
	if err != nil {
		// Committed: recovery finishes the write-through.
		return fmt.Errorf("write through transaction %d (recovery will finish it): %w", id, err)
	}
	if settle != nil {
		settle()
	}
	return m.Store.RemoveStaging(id)
}

// writeThrough applies committed transaction id's ops and marks it
// applied, keeping its before-images when keep (see Keeper; redo says
// recovery redoes it); the before-images that retention then drops are
// removed.
func writeThrough(s *store.Store, id int64, ops []store.RedoOp, durable, keep, redo bool) error {
	opt := ApplyOptions{Durable: durable}
	if keep {
		areas, err := s.StagingAreas(id)
		if err != nil {
			return err
		}
		opt.Keep = &Keeper{Store: s, ID: id, Staging: areas, Redo: redo}
	}
	if err := Apply(ops, opt); err != nil {
		return err
	}
	store.Fault("txn.before-mark-applied")
	if !keep {
		return s.MarkApplied(id)
	}
	dropped, err := s.MarkAppliedKeeping(id, opt.Keep.Bytes, opt.Keep.Records)
	if err == nil {
		// Stored with the mark: the file was for a crash before it.
		os.Remove(filepath.Join(s.UndoDir(id), recordsName))
	}
	for _, d := range dropped {
		// Best effort: txexec gc finds what is left.
		s.RemoveUndo(d)
	}
	return err
}

// isConflict reports whether err, which stops a commit, is a conflict
// (the command may succeed if re-run) rather than an internal error. vfs
// dooms a transaction whose host objects changed while it read them with
// a plain error "conflict on PATH (...)", not a *vfs.ConflictError, hence
// the prefix test.
func isConflict(err error) bool {
	var cf *vfs.ConflictError
	return errors.As(err, &cf) || strings.HasPrefix(err.Error(), "conflict on ")
}

// conflictWith finds a transaction committed since this one began whose
// write set has a granule (vfs.GranuleEntry, …) that this one read, by the
// rules of docs/semantics.md §3:
//
//   - an entry (a name made, removed or replaced) conflicts with every read
//     of its path, a lookup included, and with the listing of its
//     directory;
//   - data conflicts with reads of the contents and of the attributes
//     (which show size and mtime);
//   - meta conflicts with reads of the attributes.
//
// A granule of an unknown kind counts as an entry. Otherwise it returns, by
// path, the data and meta granules of the objects read that those
// transactions changed without conflict: the host validation of those has
// to allow for their write-through (vfs.ValidateReadSet).
func conflictWith(reads []store.ReadRecord, since []store.WriteSet) (rewritten map[string][]store.Granule, err error) {
	if len(since) == 0 {
		return nil, nil
	}
	read := make(map[string]store.ReadRecord, len(reads))
	for _, r := range reads {
		read[r.Path] = r
	}
	for _, ws := range since {
		for _, g := range ws.Granules {
			r, ok := read[g.Path]
			switch g.Kind {
			case vfs.GranuleData:
				if ok && (r.Data || r.Meta) {
					return nil, &vfs.ConflictError{Path: g.Path, Reason: fmt.Sprintf("its data was changed by transaction %d, committed after this one began", ws.TxID)}
				}
			case vfs.GranuleMeta:
				if ok && r.Meta {
					return nil, &vfs.ConflictError{Path: g.Path, Reason: fmt.Sprintf("its attributes were changed by transaction %d, committed after this one began", ws.TxID)}
				}
			default:
				if ok {
					return nil, &vfs.ConflictError{Path: g.Path, Reason: fmt.Sprintf("changed by transaction %d, committed after this one began", ws.TxID)}
				}
				if dir := path.Dir(g.Path); read[dir].Listing {
					return nil, &vfs.ConflictError{Path: dir, Reason: fmt.Sprintf("listed, and changed by transaction %d", ws.TxID)}
				}
				continue
			}
			if ok {
				if rewritten == nil {
					rewritten = map[string][]store.Granule{}
				}
				rewritten[g.Path] = append(rewritten[g.Path], g)
			}
		}
	}
	return rewritten, nil
}

// Abort discards the transaction.
func (t *Transaction) Abort(reason string) error {
	defer t.releaseLock()
	t.View.Close()
	return t.m.abort(t.ID, reason)
}

// abort throws away running transaction id, which this process owns:
// its staged objects first, then the record of the abort and why, then
// its staging directories. Nothing else can commit it meanwhile (only
// its owner commits a running transaction), and on a full disk — which
// its staging may have filled — the space they free is what the store
// needs to record the abort.
func (m *Manager) abort(id int64, reason string) error {
	freeErr := m.Store.FreeStaging(id)
	if err := m.Store.Abort(id, reason); err != nil {
		return err
	}
	if err := m.Store.RemoveStaging(id); err != nil {
		return err
	}
	return freeErr
}

// abortKept records that kept transaction id is thrown away and removes
// its staging area — only if it was ours to abort: one that another
// txexec commit committed meanwhile keeps it.
func (m *Manager) abortKept(id int64, reason string) error {
	if err := m.Store.Abort(id, reason); err != nil {
		return err
	}
	return m.Store.RemoveStaging(id)
}

// Recover finishes every committed transaction whose supervisor died before
// writing it through, and aborts every running one whose supervisor died.
// It is idempotent and safe to interrupt: the redo operations check what
// is already done. It waits for the commit lock (shared) while a
// transaction that took it early runs.
func Recover(s *store.Store, durable bool) (finished, aborted []int64, err error) {
	release, err := s.LockCommits(store.LockShared)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	return recoverLocked(s, durable)
}

// AutoRecover is Recover at the start of every txexec, except that it does
// nothing (ran is false) instead of waiting while a transaction that took
// the commit lock early runs: that transaction recovered when it took it,
// and everything committed but not yet written through is in the
// validation window of every transaction begun meanwhile.
func AutoRecover(s *store.Store, durable bool) (finished, aborted []int64, ran bool, err error) {
	release, err := s.LockCommits(store.LockSharedNoWait)
	if errors.Is(err, store.ErrLockBusy) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	defer release()
	finished, aborted, err = recoverLocked(s, durable)
	return finished, aborted, true, err
}

// recoverLocked is Recover.
//
// Preconditions: the commit lock is held, shared or exclusive.
func recoverLocked(s *store.Store, durable bool) (finished, aborted []int64, err error) {
	// Orphans' staged objects are garbage (they can no longer commit):
	// freed before anything is written to the store, so that recovery
	// works on a disk they filled.
	orphans, err := s.Orphans(Alive)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range orphans {
		// Best effort, as the removal below: an area on a mount that is
		// gone must not stop recovery.
		s.FreeStaging(id)
	}
	pending, err := s.ClaimPending(Alive)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pending {
		if err := writeThrough(s, p.ID, p.Ops, durable, p.Undo == store.UndoKeep, true); err != nil {
			var se *store.StateError
			if errors.As(err, &se) {
				return finished, nil, err
			}
			return finished, nil, &RecoveryError{ID: p.ID, Err: err}
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

// RecoveryError is a committed transaction whose write-through recovery
// cannot finish: a redo op fails (Err, an *OpError when it is one op), and
// will again at every recovery until its cause is removed. Recovery stops
// there: the transactions committed after it may depend on its changes.
type RecoveryError struct {
	ID  int64
	Err error
}

func (e *RecoveryError) Error() string {
	what := e.Err.Error()
	var oe *OpError
	if errors.As(e.Err, &oe) {
		what = fmt.Sprintf("redo op %d (%s %s) failed: %v", oe.Index, oe.Op.Kind, oe.Op.Path, oe.Err)
	}
	return fmt.Sprintf("transaction %d is committed but its write-through cannot finish: %s; "+
		"every txexec with this state directory retries it first: remove the cause on the host, then run `txexec recover`", e.ID, what)
}

func (e *RecoveryError) Unwrap() error { return e.Err }

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
