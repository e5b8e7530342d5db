package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"
)

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	Query(query string, args ...any) (*sql.Rows, error)
	QueryRow(query string, args ...any) *sql.Row
}

// Begin records a new running transaction owned by this process and
// creates its staging directory. Its snapshot (Tx.StartSeq) is the latest
// commit that is written through: a transaction committed but still being
// written through when this one begins may be seen half done, so it counts
// as committed after this one began and is validated against.
func (s *Store) Begin(info TxInfo) (Tx, error) {
	if info.Command == nil {
		info.Command = []string{}
	}
	cmd, err := json.Marshal(info.Command)
	if err != nil {
		return Tx{}, fmt.Errorf("begin transaction: %w", err)
	}
	var t Tx
	err = s.write(func(tx *sql.Tx) error {
		if err := tx.QueryRow(`SELECT min(c.last_seq, coalesce((SELECT min(seq) - 1 FROM tx WHERE state = ?), c.last_seq))
			FROM commit_counter c`, StateCommitted).Scan(&t.StartSeq); err != nil {
			return err
		}
		var run, runSeq sql.NullInt64
		if info.Run != 0 {
			run = sql.NullInt64{Int64: info.Run, Valid: true}
			runSeq = sql.NullInt64{Int64: int64(info.RunSeq), Valid: true}
		}
		undo := UndoNone
		if info.KeepUndo {
			undo = UndoKeep
		}
		res, err := tx.Exec(`INSERT INTO tx (state, command, cwd, owner_pid, owner_start, start_seq, begin_ns, run_id, run_seq, undo)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			StateRunning, string(cmd), info.Cwd, s.opt.Owner.Pid, int64(s.opt.Owner.Start),
			t.StartSeq, s.opt.Now().UnixNano(), run, runSeq, undo)
		if err != nil {
			return err
		}
		if t.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		// A directory with this id can only be left by a Begin that
		// crashed before its COMMIT: the id was never handed out.
		dir := s.StagingDir(t.ID)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.Mkdir(dir, stagingMode()); err != nil {
			return err
		}
		return os.Chmod(dir, stagingMode()) // whatever the umask
	})
	if err != nil {
		return Tx{}, fmt.Errorf("begin transaction: %w", err)
	}
	return t, nil
}

// Commit is the commit point of transaction id (running or kept). In one
// write transaction, which serializes committers across processes, it
// loads the write sets of every transaction committed after id began and
// passes them to validate; if validate fails, nothing changes (id stays
// running or kept, so the caller can abort it) and its error is returned
// wrapped. Otherwise it stores p (ops in order, write set, read set) —
// for a kept transaction p must be empty: what Keep stored is used —,
// gives id the next commit seq, makes this process its owner and commits.
// Once Commit returns a seq the transaction survives any crash; recovery
// redoes ops until MarkApplied.
//
// validate runs with the database locked against every other committer:
// it must be quick and must not call the Store.
func (s *Store) Commit(id int64, validate func(since []WriteSet) error, p Prepared) (seq int64, err error) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	err = s.write(func(tx *sql.Tx) error {
		var state State
		var startSeq int64
		if err := tx.QueryRow(`SELECT state, start_seq FROM tx WHERE id = ?`, id).Scan(&state, &startSeq); err != nil {
			return err
		}
		if state != StateRunning && state != StateKept {
			return &StateError{ID: id, State: state}
		}
		if state == StateKept && (len(p.Ops) > 0 || len(p.Writes) > 0 || len(p.Reads) > 0) {
			return fmt.Errorf("it is kept: commit it with what Keep stored")
		}
		since, err := writeSetsSince(tx, startSeq)
		if err != nil {
			return fmt.Errorf("load write sets: %w", err)
		}
		if validate != nil {
			if err := validate(since); err != nil {
				return fmt.Errorf("validate: %w", err)
			}
		}
		readN := len(p.Reads)
		p.Reads = readsNamedByOps(p.Ops, p.Reads)
		if err := insertPrepared(tx, id, p); err != nil {
			return err
		}
		if p.Undoes != 0 {
			if _, err := tx.Exec(`UPDATE tx SET undoes = ? WHERE id = ?`, p.Undoes, id); err != nil {
				return err
			}
		}
		if state == StateKept {
			// Keep stored the whole read set, for this commit's
			// validation; from now on only show needs any of it: the
			// records readsNamedByOps keeps.
			if _, err := tx.Exec(`DELETE FROM readset WHERE tx_id = ?1 AND path NOT IN
				(SELECT path FROM redo WHERE tx_id = ?1 UNION SELECT src FROM redo WHERE tx_id = ?1)`, id); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(`UPDATE commit_counter SET last_seq = last_seq + 1 RETURNING last_seq`).Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE tx SET state = ?, seq = ?, commit_ns = ?, owner_pid = ?, owner_start = ?,
			read_n = COALESCE(read_n, ?) WHERE id = ?`,
			StateCommitted, seq, s.opt.Now().UnixNano(), s.opt.Owner.Pid, int64(s.opt.Owner.Start), readN, id); err != nil {
			return err
		}
		Fault("store.before-commit")
		return nil
	})
	if err != nil {
		return 0, notFound("commit", id, err)
	}
	Fault("store.after-commit")
	return seq, nil
}

// Keep records that running transaction id stays prepared — p stored,
// its staging directory kept — for a later Commit (which re-validates,
// against the write sets committed since id began and, through p.Reads,
// against the host) or Abort, possibly by another process.
func (s *Store) Keep(id int64, p Prepared) error {
	err := s.write(func(tx *sql.Tx) error {
		if err := requireRunning(tx, id); err != nil {
			return err
		}
		if err := insertPrepared(tx, id, p); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE tx SET state = ?, kept_ns = ?, read_n = ? WHERE id = ?`,
			StateKept, s.opt.Now().UnixNano(), len(p.Reads), id)
		return err
	})
	if err != nil {
		return notFound("keep", id, err)
	}
	return nil
}

// requireRunning fails, with a *StateError if it is in another state,
// unless transaction id is running.
func requireRunning(tx *sql.Tx, id int64) error {
	var state State
	if err := tx.QueryRow(`SELECT state FROM tx WHERE id = ?`, id).Scan(&state); err != nil {
		return err
	}
	if state != StateRunning {
		return &StateError{ID: id, State: state}
	}
	return nil
}

// LoadKept returns kept transaction id as Begin returned it and what Keep
// stored, for committing it. A transaction in another state is a
// *StateError.
func (s *Store) LoadKept(id int64) (Tx, Prepared, error) {
	t := Tx{ID: id}
	var p Prepared
	var state State
	err := s.db.QueryRow(`SELECT state, start_seq FROM tx WHERE id = ?`, id).Scan(&state, &t.StartSeq)
	if err == nil && state != StateKept {
		err = &StateError{ID: id, State: state}
	}
	if err == nil {
		p.Ops, err = loadOps(s.db, id)
	}
	if err == nil {
		p.Writes, err = loadGranules(s.db, id)
	}
	if err == nil {
		p.Reads, err = loadReads(s.db, id)
	}
	if err != nil {
		return Tx{}, Prepared{}, notFound("load", id, err)
	}
	return t, p, nil
}

// Reads returns the read set stored for transaction id, sorted by path:
// all of it for a kept transaction, the records of the paths its redo
// operations name for a committed one (TxRecord.ReadN counts all).
func (s *Store) Reads(id int64) ([]ReadRecord, error) {
	reads, err := loadReads(s.db, id)
	if err != nil {
		return nil, fmt.Errorf("read set of transaction %d: %w", id, err)
	}
	return reads, nil
}

func insertPrepared(tx *sql.Tx, id int64, p Prepared) error {
	if err := insertOps(tx, id, p.Ops); err != nil {
		return fmt.Errorf("insert redo: %w", err)
	}
	if err := insertGranules(tx, id, p.Writes); err != nil {
		return fmt.Errorf("insert write set: %w", err)
	}
	if err := insertReads(tx, id, p.Reads); err != nil {
		return fmt.Errorf("insert read set: %w", err)
	}
	return nil
}

func writeSetsSince(tx *sql.Tx, startSeq int64) ([]WriteSet, error) {
	rows, err := tx.Query(`SELECT t.id, t.seq, g.kind, g.path, g.ino, g.mtime_sec, g.mtime_nsec
		FROM tx t LEFT JOIN granule g ON g.tx_id = t.id
		WHERE t.seq > ? ORDER BY t.seq, g.kind, g.path`, startSeq)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var sets []WriteSet
	for rows.Next() {
		var id, seq int64
		var kind, path sql.NullString
		var ino, msec, mnsec sql.NullInt64
		if err := rows.Scan(&id, &seq, &kind, &path, &ino, &msec, &mnsec); err != nil {
			return nil, err
		}
		if len(sets) == 0 || sets[len(sets)-1].TxID != id {
			sets = append(sets, WriteSet{TxID: id, Seq: seq})
		}
		if kind.Valid {
			w := &sets[len(sets)-1]
			w.Granules = append(w.Granules, Granule{Kind: kind.String, Path: path.String,
				Ino: uint64(ino.Int64), Mtime: Timespec{Sec: msec.Int64, Nsec: mnsec.Int64}})
		}
	}
	return sets, rows.Err()
}

func insertOps(tx *sql.Tx, id int64, ops []RedoOp) error {
	if len(ops) == 0 {
		return nil
	}
	st, err := tx.Prepare(`INSERT INTO redo (tx_id, n, kind, path, src, ino, ino2, attrs, mode, uid, gid,
		atime_sec, atime_nsec, mtime_sec, mtime_nsec, xattr_name, xattr_value)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for n, op := range ops {
		if _, err := st.Exec(id, n, string(op.Kind), op.Path, op.Src, int64(op.Ino), int64(op.Ino2), int64(op.Attrs),
			int64(op.Mode), int64(op.UID), int64(op.GID),
			op.Atime.Sec, op.Atime.Nsec, op.Mtime.Sec, op.Mtime.Nsec, op.XattrName, op.XattrValue); err != nil {
			return err
		}
	}
	return nil
}

func insertGranules(tx *sql.Tx, id int64, writes []Granule) error {
	if len(writes) == 0 {
		return nil
	}
	st, err := tx.Prepare(`INSERT OR IGNORE INTO granule (tx_id, kind, path, ino, mtime_sec, mtime_nsec) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, g := range writes {
		if _, err := st.Exec(id, g.Kind, g.Path, int64(g.Ino), g.Mtime.Sec, g.Mtime.Nsec); err != nil {
			return err
		}
	}
	return nil
}

// readsNamedByOps returns the records of reads whose path an op of ops
// names (as the path it acts on or as its other path): what `txexec show`
// needs of a committed transaction's read set, to tell whether a path it
// changed existed before (cmd/txexec describeOps). The rest served the
// validation at the commit point only, and storing it cost about as much
// per record as the lookup that made it (migration 0007).
func readsNamedByOps(ops []RedoOp, reads []ReadRecord) []ReadRecord {
	named := make(map[string]bool, 2*len(ops))
	for _, op := range ops {
		named[op.Path] = true
		if op.Src != "" {
			named[op.Src] = true
		}
	}
	var kept []ReadRecord
	for _, r := range reads {
		if named[r.Path] {
			kept = append(kept, r)
		}
	}
	return kept
}

func insertReads(tx *sql.Tx, id int64, reads []ReadRecord) error {
	if len(reads) == 0 {
		return nil
	}
	st, err := tx.Prepare(`INSERT OR REPLACE INTO readset (tx_id, path, present, dev, ino, type, data, meta, mode, uid, gid,
		size, mtime_sec, mtime_nsec, ctime_sec, ctime_nsec, listing, listing_sum)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, r := range reads {
		if _, err := st.Exec(id, r.Path, r.Exists, int64(r.Dev), int64(r.Ino), int64(r.Type), r.Data, r.Meta,
			int64(r.Mode), int64(r.UID), int64(r.GID), r.Size,
			r.Mtime.Sec, r.Mtime.Nsec, r.Ctime.Sec, r.Ctime.Nsec, r.Listing, int64(r.ListingSum)); err != nil {
			return err
		}
	}
	return nil
}

func loadReads(q querier, id int64) ([]ReadRecord, error) {
	rows, err := q.Query(`SELECT path, present, dev, ino, type, data, meta, mode, uid, gid, size,
		mtime_sec, mtime_nsec, ctime_sec, ctime_nsec, listing, listing_sum FROM readset WHERE tx_id = ? ORDER BY path`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var reads []ReadRecord
	for rows.Next() {
		var r ReadRecord
		var dev, ino, typ, mode, uid, gid, sum int64
		if err := rows.Scan(&r.Path, &r.Exists, &dev, &ino, &typ, &r.Data, &r.Meta, &mode, &uid, &gid, &r.Size,
			&r.Mtime.Sec, &r.Mtime.Nsec, &r.Ctime.Sec, &r.Ctime.Nsec, &r.Listing, &sum); err != nil {
			return nil, err
		}
		r.Dev, r.Ino, r.ListingSum = uint64(dev), uint64(ino), uint64(sum)
		r.Type, r.Mode, r.UID, r.GID = uint32(typ), uint32(mode), uint32(uid), uint32(gid)
		reads = append(reads, r)
	}
	return reads, rows.Err()
}

// queryAll runs query and returns what scan reads from each row, in
// order.
func queryAll[T any](q querier, scan func(*sql.Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func loadGranules(q querier, id int64) ([]Granule, error) {
	return queryAll(q, func(rows *sql.Rows) (g Granule, err error) {
		var ino int64
		err = rows.Scan(&g.Kind, &g.Path, &ino, &g.Mtime.Sec, &g.Mtime.Nsec)
		g.Ino = uint64(ino)
		return g, err
	}, `SELECT kind, path, ino, mtime_sec, mtime_nsec FROM granule WHERE tx_id = ? ORDER BY kind, path`, id)
}

func loadOps(q querier, id int64) ([]RedoOp, error) {
	rows, err := q.Query(`SELECT kind, path, src, ino, ino2, attrs, mode, uid, gid,
		atime_sec, atime_nsec, mtime_sec, mtime_nsec, xattr_name, xattr_value FROM redo WHERE tx_id = ? ORDER BY n`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ops []RedoOp
	for rows.Next() {
		var op RedoOp
		var kind string
		var ino, ino2, attrs, mode, uid, gid int64
		if err := rows.Scan(&kind, &op.Path, &op.Src, &ino, &ino2, &attrs, &mode, &uid, &gid,
			&op.Atime.Sec, &op.Atime.Nsec, &op.Mtime.Sec, &op.Mtime.Nsec, &op.XattrName, &op.XattrValue); err != nil {
			return nil, err
		}
		op.Kind = OpKind(kind)
		op.Ino, op.Ino2 = uint64(ino), uint64(ino2)
		op.Attrs, op.Mode = AttrMask(attrs), uint32(mode)
		op.UID, op.GID = uint32(uid), uint32(gid)
		ops = append(ops, op)
	}
	return ops, rows.Err()
}

// transition moves transaction id from one of the states from to state
// to, doing nothing if it is already there. set and args add columns to
// the update.
func (s *Store) transition(op string, id int64, from []State, to State, set string, args ...any) error {
	err := s.write(func(tx *sql.Tx) error {
		var state State
		if err := tx.QueryRow(`SELECT state FROM tx WHERE id = ?`, id).Scan(&state); err != nil {
			return err
		}
		if state == to {
			return nil
		}
		if !slices.Contains(from, state) {
			return &StateError{ID: id, State: state}
		}
		_, err := tx.Exec(`UPDATE tx SET state = ?`+set+` WHERE id = ?`, append(append([]any{to}, args...), id)...)
		return err
	})
	if err != nil {
		return notFound(op, id, err)
	}
	return nil
}

// MarkApplied records that committed transaction id has been written
// through to the host; recovery will not redo it. Already applied is fine.
func (s *Store) MarkApplied(id int64) error {
	return s.transition("mark applied", id, []State{StateCommitted}, StateApplied,
		`, applied_ns = ?`, s.opt.Now().UnixNano())
}

// Abort records that running or kept transaction id is thrown away, and
// why (for txexec log). Aborting an aborted transaction keeps the first
// reason. The caller removes the staging directory.
func (s *Store) Abort(id int64, reason string) error {
	return s.transition("abort", id, []State{StateRunning, StateKept}, StateAborted,
		`, reason = ?, aborted_ns = ?`, reason, s.opt.Now().UnixNano())
}

// AbortKept is Abort for txexec abort: only a kept transaction; a
// running one belongs to its supervisor.
func (s *Store) AbortKept(id int64, reason string) error {
	return s.transition("abort", id, []State{StateKept}, StateAborted,
		`, reason = ?, aborted_ns = ?`, reason, s.opt.Now().UnixNano())
}

// SetCommandStatus records the exit status of the transaction's command
// (128+N for signal N), in any state.
func (s *Store) SetCommandStatus(id int64, status int) error {
	err := s.write(func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE tx SET command_status = ? WHERE id = ?`, status, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = sql.ErrNoRows
		}
		return err
	})
	if err != nil {
		return notFound("set command status of", id, err)
	}
	return nil
}

// ClaimPending is recovery's view of the redo log: it makes this process
// the owner of every committed, not yet applied transaction whose owner is
// dead (alive reports false), and returns them in commit order with their
// ops, to be redone and then marked applied. Transactions of live owners
// are theirs to finish; claiming under the write lock keeps two recovering
// processes from writing one transaction through at once.
//
// alive runs with the database locked against every other writer.
func (s *Store) ClaimPending(alive func(Owner) bool) ([]PendingTx, error) {
	var pending []PendingTx
	err := s.write(func(tx *sql.Tx) error {
		pending = nil // a second try starts anew (see write)
		rows, err := tx.Query(`SELECT id, seq, owner_pid, owner_start, undo FROM tx WHERE state = ? ORDER BY seq`, StateCommitted)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p PendingTx
			var o Owner
			var start int64
			if err := rows.Scan(&p.ID, &p.Seq, &o.Pid, &start, &p.Undo); err != nil {
				return err
			}
			o.Start = uint64(start)
			if !alive(o) {
				pending = append(pending, p)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range pending {
			p := &pending[i]
			if _, err := tx.Exec(`UPDATE tx SET owner_pid = ?, owner_start = ? WHERE id = ?`,
				s.opt.Owner.Pid, int64(s.opt.Owner.Start), p.ID); err != nil {
				return err
			}
			if p.Ops, err = loadOps(tx, p.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim pending transactions: %w", err)
	}
	return pending, nil
}

// Orphans returns the running transactions whose owner is dead (alive
// reports false), in increasing order, without writing anything: what
// AbortOrphans would abort, whose staging recovery frees first
// (FreeStaging).
func (s *Store) Orphans(alive func(Owner) bool) ([]int64, error) {
	type running struct {
		id    int64
		owner Owner
	}
	all, err := queryAll(s.db, func(rows *sql.Rows) (r running, err error) {
		var start int64
		err = rows.Scan(&r.id, &r.owner.Pid, &start)
		r.owner.Start = uint64(start)
		return r, err
	}, `SELECT id, owner_pid, owner_start FROM tx WHERE state = ? ORDER BY id`, StateRunning)
	if err != nil {
		return nil, fmt.Errorf("list orphaned transactions: %w", err)
	}
	var ids []int64
	for _, r := range all {
		if !alive(r.owner) {
			ids = append(ids, r.id)
		}
	}
	return ids, nil
}

// AbortOrphans aborts, with reason, every running transaction whose owner
// is dead (alive reports false) and returns their ids in increasing order;
// the caller removes their staging directories. Kept transactions are not
// orphans: they wait for txexec commit or abort.
//
// alive runs with the database locked against every other writer.
func (s *Store) AbortOrphans(alive func(Owner) bool, reason string) ([]int64, error) {
	var ids []int64
	err := s.write(func(tx *sql.Tx) error {
		ids = nil // a second try starts anew (see write)
		rows, err := tx.Query(`SELECT id, owner_pid, owner_start FROM tx WHERE state = ? ORDER BY id`, StateRunning)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, start int64
			var o Owner
			if err := rows.Scan(&id, &o.Pid, &start); err != nil {
				return err
			}
			o.Start = uint64(start)
			if !alive(o) {
				ids = append(ids, id)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		now := s.opt.Now().UnixNano()
		for _, id := range ids {
			if _, err := tx.Exec(`UPDATE tx SET state = ?, reason = ?, aborted_ns = ? WHERE id = ?`,
				StateAborted, reason, now, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("abort orphaned transactions: %w", err)
	}
	return ids, nil
}

const recordColumns = `id, state, command, cwd, owner_pid, owner_start, start_seq, seq, reason,
	command_status, begin_ns, commit_ns, applied_ns, aborted_ns, kept_ns,
	(SELECT count(*) FROM redo WHERE tx_id = tx.id),
	(SELECT count(*) FROM granule WHERE tx_id = tx.id),
	COALESCE(read_n, (SELECT count(*) FROM readset WHERE tx_id = tx.id)),
	COALESCE(run_id, 0), COALESCE(run_seq, 0),
	undo, undo_bytes, undoes, ` + undoneBy

func scanRecord(sc interface{ Scan(...any) error }) (TxRecord, error) {
	var r TxRecord
	var cmd string
	var start int64
	var seq, status, commitNs, appliedNs, abortedNs, keptNs sql.NullInt64
	var beginNs int64
	var undoes sql.NullInt64
	if err := sc.Scan(&r.ID, &r.State, &cmd, &r.Cwd, &r.Owner.Pid, &start, &r.StartSeq, &seq, &r.Reason,
		&status, &beginNs, &commitNs, &appliedNs, &abortedNs, &keptNs, &r.OpN, &r.GranuleN, &r.ReadN, &r.Run, &r.RunSeq,
		&r.Undo.State, &r.Undo.Bytes, &undoes, &r.Undo.UndoneBy); err != nil {
		return TxRecord{}, err
	}
	r.Undo.Undoes = undoes.Int64
	if err := json.Unmarshal([]byte(cmd), &r.Command); err != nil {
		return TxRecord{}, fmt.Errorf("decode command of transaction %d: %w", r.ID, err)
	}
	r.Owner.Start = uint64(start)
	r.Seq = seq.Int64
	if status.Valid {
		st := int(status.Int64)
		r.CommandStatus = &st
	}
	r.Begun = time.Unix(0, beginNs)
	r.Committed = nsTime(commitNs)
	r.Applied = nsTime(appliedNs)
	r.Aborted = nsTime(abortedNs)
	r.Kept = nsTime(keptNs)
	return r, nil
}

func nsTime(ns sql.NullInt64) time.Time {
	if !ns.Valid {
		return time.Time{}
	}
	return time.Unix(0, ns.Int64)
}

// Log returns up to limit transactions (all when limit <= 0), newest
// first, for txexec log.
func (s *Store) Log(limit int) ([]TxRecord, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.db.Query(`SELECT `+recordColumns+` FROM tx ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	defer rows.Close()
	var recs []TxRecord
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("read log: %w", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	return recs, nil
}

// CommittedSince returns the write sets of the transactions committed
// since transaction id began, as Commit's validate gets them, without
// committing it: for a transaction about to abort that must know whether
// it ran on a state since changed (txn.Transaction.Stale).
func (s *Store) CommittedSince(id int64) ([]WriteSet, error) {
	var since []WriteSet
	// A write transaction only for the snapshot of both reads together:
	// rare (a failed command of txexec parallel) and short.
	err := s.write(func(tx *sql.Tx) error {
		var startSeq int64
		if err := tx.QueryRow(`SELECT start_seq FROM tx WHERE id = ?`, id).Scan(&startSeq); err != nil {
			return notFound("write sets since", id, err)
		}
		var err error
		since, err = writeSetsSince(tx, startSeq)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("write sets committed since transaction %d began: %w", id, err)
	}
	return since, nil
}

// BeginRun records the start of a txexec parallel run of commandN
// commands and returns its id, for TxInfo.Run.
func (s *Store) BeginRun(commandN int) (int64, error) {
	var id int64
	err := s.write(func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO parallel_run (commands, begin_ns) VALUES (?, ?)`, commandN, s.opt.Now().UnixNano())
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("begin parallel run: %w", err)
	}
	return id, nil
}

// RunLog returns the transactions of parallel run id in the order of its
// commands, each command's in the order they began (re-runs after the
// first), for txexec log --run. A run the store does not know wraps
// ErrNotFound.
func (s *Store) RunLog(id int64) ([]TxRecord, error) {
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM parallel_run WHERE id = ?`, id).Scan(&n); err != nil {
		return nil, fmt.Errorf("read run %d: %w", id, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("parallel run %d: %w", id, ErrNotFound)
	}
	rows, err := s.db.Query(`SELECT `+recordColumns+` FROM tx WHERE run_id = ? ORDER BY run_seq, id`, id)
	if err != nil {
		return nil, fmt.Errorf("read run %d: %w", id, err)
	}
	defer rows.Close()
	var recs []TxRecord
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("read run %d: %w", id, err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read run %d: %w", id, err)
	}
	return recs, nil
}

// Get returns transaction id and, once it is kept or committed, its redo
// ops in order, for txexec show.
func (s *Store) Get(id int64) (TxRecord, []RedoOp, error) {
	r, err := scanRecord(s.db.QueryRow(`SELECT `+recordColumns+` FROM tx WHERE id = ?`, id))
	if err != nil {
		return TxRecord{}, nil, notFound("get", id, err)
	}
	if r.OpN == 0 {
		// Ops are stored with the commit or Keep, in the same SQL transaction.
		return r, nil, nil
	}
	ops, err := loadOps(s.db, id)
	if err != nil {
		return TxRecord{}, nil, notFound("get", id, err)
	}
	return r, ops, nil
}
