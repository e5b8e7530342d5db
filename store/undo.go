package store

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// UndoState is what a transaction's write-through keeps of what it
// replaced or removed, for txexec undo (tx.undo).
type UndoState string

// The undo states.
const (
	// UndoKeep: its before-images are kept in its undo areas.
	UndoKeep UndoState = "keep"
	// UndoNone: none were kept (--undo=none, or stored before undo
	// existed).
	UndoNone UndoState = "none"
	// UndoDropped: they were kept, then dropped (retention, txexec gc, or
	// the transaction was undone).
	UndoDropped UndoState = "dropped"
)

// UndoName is the directory of the state directory that holds one undo
// area per transaction, for the paths on the state directory's own mount:
// undo/ID. Other mounts get MOUNTPOINT/.txexec-undo-INSTANCE-ID
// (AddUndoArea).
const UndoName = "undo"

// UndoAreaPrefix begins the name of an undo area at the root of a mount
// other than the state directory's.
const UndoAreaPrefix = ".txexec-undo-"

// FaultUndoAreaRegistered is the fault point between recording an undo
// area and creating its directory.
const FaultUndoAreaRegistered = "store.undo-area-registered"

// The default undo retention: before-images of at most the last
// DefaultUndoKeepLast transactions that kept them, and at most
// DefaultUndoMaxBytes held by all of them together, whichever is smaller.
const (
	DefaultUndoKeepLast = 50
	DefaultUndoMaxBytes = int64(1) << 30
)

// Retention bounds the before-images a state directory keeps: the newest
// transactions that kept them are kept while there are at most KeepLast
// and they hold at most MaxBytes together; older ones are dropped.
type Retention struct {
	KeepLast int
	MaxBytes int64
}

// Names of the settings (table setting) that hold Retention.
const (
	settingUndoKeepLast = "undo_keep_last"
	settingUndoMaxBytes = "undo_max_bytes"
)

// UndoArea is one undo area of a transaction: its directory, and the
// mount point of the mount it is on ("" for the state directory's).
type UndoArea struct {
	Path       string
	MountPoint string
}

// UndoInfo is what the store knows of a transaction's before-images.
type UndoInfo struct {
	State UndoState
	// Bytes is the space its before-images held when its write-through
	// ended (the objects that nothing else links).
	Bytes int64
	// Undoes is the transaction it undoes (a txexec undo transaction), or
	// 0; UndoneBy the committed transaction that undoes it, or 0.
	Undoes, UndoneBy int64
}

// Undoable reports whether txexec undo can put back a transaction in
// state st with undo info u.
func (u UndoInfo) Undoable(st State) bool {
	return st == StateApplied && u.State == UndoKeep && u.UndoneBy == 0
}

// UndoDir returns the undo area of transaction id in the state directory,
// for the paths on its own mount.
func (s *Store) UndoDir(id int64) string {
	return filepath.Join(s.dir, UndoName, strconv.FormatInt(id, 10))
}

// MakeUndoDir makes UndoDir(id) if it is not there (a write-through that
// is redone finds it made), with the mode of a staging directory.
func (s *Store) MakeUndoDir(id int64) error {
	d := s.UndoDir(id)
	if err := os.Mkdir(filepath.Dir(d), stagingMode()); err != nil && !os.IsExist(err) {
		return fmt.Errorf("make undo area of transaction %d: %w", id, err)
	}
	if err := os.Mkdir(d, stagingMode()); err != nil && !os.IsExist(err) {
		return fmt.Errorf("make undo area of transaction %d: %w", id, err)
	}
	return nil
}

// AddUndoArea gives committed transaction id an undo area on the mount
// whose root is mountPoint and returns its path,
// MOUNTPOINT/.txexec-undo-INSTANCE-ID. As AddStagingArea, it records the
// area before it makes the directory, so that txexec gc finds every area
// whenever a crash comes; a write-through that is redone finds its area
// made already, and keeps it.
func (s *Store) AddUndoArea(id int64, mountPoint string) (string, error) {
	if !filepath.IsAbs(mountPoint) || filepath.Clean(mountPoint) != mountPoint {
		return "", fmt.Errorf("add undo area of transaction %d: mount point %q is not absolute and clean", id, mountPoint)
	}
	path := filepath.Join(mountPoint, UndoAreaPrefix+s.instance+"-"+strconv.FormatInt(id, 10))
	err := s.write(func(tx *sql.Tx) error {
		var state State
		if err := tx.QueryRow(`SELECT state FROM tx WHERE id = ?`, id).Scan(&state); err != nil {
			return err
		}
		if state != StateCommitted {
			return &StateError{ID: id, State: state}
		}
		_, err := tx.Exec(`INSERT OR IGNORE INTO undo_area (tx_id, path, mount_point) VALUES (?, ?, ?)`, id, path, mountPoint)
		return err
	})
	if err != nil {
		return "", notFound("add undo area of", id, err)
	}
	Fault(FaultUndoAreaRegistered)
	if err := os.Mkdir(path, stagingMode()); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("create undo area of transaction %d: %w", id, err)
	}
	if err := os.Chmod(path, stagingMode()); err != nil {
		return "", fmt.Errorf("create undo area of transaction %d: %w", id, err)
	}
	return path, nil
}

// UndoAreas returns the undo areas of transaction id: UndoDir(id) first
// (mount point ""), then those on other mounts, by path.
func (s *Store) UndoAreas(id int64) ([]UndoArea, error) {
	areas, err := queryAll(s.db, func(rows *sql.Rows) (a UndoArea, err error) {
		err = rows.Scan(&a.Path, &a.MountPoint)
		return a, err
	}, `SELECT path, mount_point FROM undo_area WHERE tx_id = ? ORDER BY path`, id)
	if err != nil {
		return nil, fmt.Errorf("undo areas of transaction %d: %w", id, err)
	}
	return append([]UndoArea{{Path: s.UndoDir(id)}}, areas...), nil
}

// Undo returns what the store knows of transaction id's before-images.
func (s *Store) Undo(id int64) (UndoInfo, error) {
	var u UndoInfo
	var undoes sql.NullInt64
	err := s.db.QueryRow(`SELECT undo, undo_bytes, undoes, `+undoneBy+` FROM tx WHERE id = ?`, id).
		Scan(&u.State, &u.Bytes, &undoes, &u.UndoneBy)
	if err != nil {
		return UndoInfo{}, notFound("read undo state of", id, err)
	}
	u.Undoes = undoes.Int64
	return u, nil
}

// undoneBy is the SQL for the committed transaction that undoes tx.id, or
// 0.
const undoneBy = `COALESCE((SELECT max(u.id) FROM tx u WHERE u.undoes = tx.id AND u.state IN ('committed', 'applied')), 0)`

// Retention returns the state directory's undo retention: the settings
// txexec gc stored, or the defaults.
func (s *Store) Retention() (Retention, error) {
	r := Retention{KeepLast: DefaultUndoKeepLast, MaxBytes: DefaultUndoMaxBytes}
	err := retentionIn(s.db, &r)
	if err != nil {
		return Retention{}, fmt.Errorf("read undo retention: %w", err)
	}
	return r, nil
}

func retentionIn(q querier, r *Retention) error {
	rows, err := q.Query(`SELECT name, value FROM setting WHERE name IN (?, ?)`, settingUndoKeepLast, settingUndoMaxBytes)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("setting %s is %q, not a count", name, value)
		}
		if name == settingUndoKeepLast {
			r.KeepLast = int(n)
		} else {
			r.MaxBytes = n
		}
	}
	return rows.Err()
}

// SetRetention stores the state directory's undo retention.
func (s *Store) SetRetention(r Retention) error {
	if r.KeepLast < 0 || r.MaxBytes < 0 {
		return errors.New("set undo retention: negative bound")
	}
	err := s.write(func(tx *sql.Tx) error {
		for name, v := range map[string]int64{settingUndoKeepLast: int64(r.KeepLast), settingUndoMaxBytes: r.MaxBytes} {
			if _, err := tx.Exec(`INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)`, name, strconv.FormatInt(v, 10)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set undo retention: %w", err)
	}
	return nil
}

// MarkAppliedKeeping is MarkApplied for a transaction whose write-through
// kept before-images holding bytes, with records, the records of them
// (opaque data, txn's), stored in the same write (UndoRecords); in it too
// it drops, by retention, the before-images of older transactions, and
// of the one this one undoes, and returns the transactions whose undo
// areas are now to be removed (RemoveUndo).
func (s *Store) MarkAppliedKeeping(id int64, bytes int64, records []byte) (dropped []int64, err error) {
	if records == nil {
		records = []byte{}
	}
	err = s.write(func(tx *sql.Tx) error {
		dropped = nil // a second try starts anew (see write)
		var state State
		if err := tx.QueryRow(`SELECT state FROM tx WHERE id = ?`, id).Scan(&state); err != nil {
			return err
		}
		if state != StateApplied {
			if state != StateCommitted {
				return &StateError{ID: id, State: state}
			}
			if _, err := tx.Exec(`UPDATE tx SET state = ?, applied_ns = ?, undo_bytes = ? WHERE id = ?`,
				StateApplied, s.opt.Now().UnixNano(), bytes, id); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT OR REPLACE INTO undo_records (tx_id, data) VALUES (?, ?)`, id, records); err != nil {
				return err
			}
		}
		var err error
		dropped, err = dropBeyondRetention(tx)
		return err
	})
	if err != nil {
		return nil, notFound("mark applied", id, err)
	}
	return dropped, nil
}

// dropBeyondRetention marks dropped the before-images that retention no
// longer keeps, and those of undone transactions, and returns their
// transactions.
func dropBeyondRetention(tx *sql.Tx) ([]int64, error) {
	r := Retention{KeepLast: DefaultUndoKeepLast, MaxBytes: DefaultUndoMaxBytes}
	if err := retentionIn(tx, &r); err != nil {
		return nil, err
	}
	type kept struct {
		id, bytes, undoneBy int64
	}
	all, err := queryAll(tx, func(rows *sql.Rows) (k kept, err error) {
		err = rows.Scan(&k.id, &k.bytes, &k.undoneBy)
		return k, err
	}, `SELECT id, undo_bytes, `+undoneBy+` FROM tx WHERE undo = ? AND state = ? ORDER BY seq DESC`, UndoKeep, StateApplied)
	if err != nil {
		return nil, err
	}
	var drop []int64
	n, total := 0, int64(0)
	for _, k := range all {
		if k.undoneBy != 0 {
			drop = append(drop, k.id)
			continue
		}
		n++
		total += k.bytes
		if n > r.KeepLast || total > r.MaxBytes {
			drop = append(drop, k.id)
		}
	}
	if err := setDropped(tx, drop); err != nil {
		return nil, err
	}
	return drop, nil
}

func setDropped(tx *sql.Tx, ids []int64) error {
	for _, id := range ids {
		if _, err := tx.Exec(`UPDATE tx SET undo = ? WHERE id = ? AND undo = ?`, UndoDropped, id, UndoKeep); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM undo_records WHERE tx_id = ?`, id); err != nil {
			return err
		}
	}
	return nil
}

// UndoRecords returns the records MarkAppliedKeeping stored for
// transaction id; ok is false when there are none (not applied yet, or
// dropped).
func (s *Store) UndoRecords(id int64) (records []byte, ok bool, err error) {
	err = s.db.QueryRow(`SELECT data FROM undo_records WHERE tx_id = ?`, id).Scan(&records)
	if err == sql.ErrNoRows {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read undo records of transaction %d: %w", id, err)
	}
	return records, true, nil
}

// DropUndo marks dropped the before-images of the given transactions (all
// applied ones that keep them when all is set) and of those beyond
// retention, and returns every transaction whose undo areas are now to
// be removed (RemoveUndo), in increasing order. A transaction that keeps
// none is not an error.
func (s *Store) DropUndo(ids []int64, all bool) ([]int64, error) {
	var dropped []int64
	err := s.write(func(tx *sql.Tx) error {
		dropped = nil
		for _, id := range ids {
			var n int
			if err := tx.QueryRow(`SELECT count(*) FROM tx WHERE id = ?`, id).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return notFound("drop before-images of", id, sql.ErrNoRows)
			}
		}
		if all {
			var err error
			ids, err = queryAll(tx, func(rows *sql.Rows) (id int64, err error) {
				err = rows.Scan(&id)
				return id, err
			}, `SELECT id FROM tx WHERE undo = ? AND state = ?`, UndoKeep, StateApplied)
			if err != nil {
				return err
			}
		}
		if err := setDropped(tx, ids); err != nil {
			return err
		}
		more, err := dropBeyondRetention(tx)
		if err != nil {
			return err
		}
		dropped = append(append(dropped, ids...), more...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("drop before-images: %w", err)
	}
	return sortedUnique(dropped), nil
}

func sortedUnique(ids []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// RemoveUndo removes the undo areas of transaction id, whose
// before-images are dropped: undo/ID and its areas on other mounts
// (absent is fine), then their records.
func (s *Store) RemoveUndo(id int64) error {
	if err := removeUndoArea(s.UndoDir(id)); err != nil {
		return fmt.Errorf("remove undo areas of transaction %d: %w", id, err)
	}
	areas, err := s.UndoAreas(id)
	if err != nil {
		return err
	}
	if len(areas) == 1 {
		return nil
	}
	err = s.write(func(tx *sql.Tx) error {
		for _, a := range areas[1:] {
			if err := removeUndoArea(a.Path); err != nil {
				return err
			}
			if _, err := tx.Exec(`DELETE FROM undo_area WHERE tx_id = ? AND path = ?`, id, a.Path); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove undo areas of transaction %d: %w", id, err)
	}
	return nil
}

// GCUndo removes the undo areas that no transaction keeps: those of
// transactions whose before-images are dropped or were never kept, and
// the undo/ID directories of ids the store does not know. It returns
// their ids in increasing order. An area that cannot be removed now stays
// recorded, for the next GCUndo.
func (s *Store) GCUndo() ([]int64, error) {
	var ids []int64
	entries, err := os.ReadDir(filepath.Join(s.dir, UndoName))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("gc undo areas: %w", err)
	}
	keep, err := queryAll(s.db, func(rows *sql.Rows) (id int64, err error) {
		err = rows.Scan(&id)
		return id, err
	}, `SELECT id FROM tx WHERE undo = ? OR state IN (?, ?)`, UndoKeep, StateRunning, StateCommitted)
	if err != nil {
		return nil, fmt.Errorf("gc undo areas: %w", err)
	}
	kept := map[int64]bool{}
	for _, id := range keep {
		kept[id] = true
	}
	for _, e := range entries {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || id <= 0 || strconv.FormatInt(id, 10) != e.Name() || kept[id] {
			continue
		}
		ids = append(ids, id)
	}
	others, err := queryAll(s.db, func(rows *sql.Rows) (id int64, err error) {
		err = rows.Scan(&id)
		return id, err
	}, `SELECT DISTINCT a.tx_id FROM undo_area a JOIN tx t ON t.id = a.tx_id
		WHERE t.undo != ? AND t.state NOT IN (?, ?)`, UndoKeep, StateRunning, StateCommitted)
	if err != nil {
		return nil, fmt.Errorf("gc undo areas: %w", err)
	}
	ids = sortedUnique(append(ids, others...))
	var removed []int64
	for _, id := range ids {
		if s.RemoveUndo(id) == nil {
			removed = append(removed, id)
		}
	}
	return removed, nil
}

// ChangedAfter returns, for each of paths, the first transaction
// committed after commit seq whose write set names it or a path below it
// (a change inside a directory changes the directory), or 0 when none
// does: for txexec undo, to say what changed a path again.
func (s *Store) ChangedAfter(seq int64, paths []string) (map[string]int64, error) {
	out := make(map[string]int64, len(paths))
	st, err := s.db.Prepare(`SELECT t.id FROM granule g JOIN tx t ON t.id = g.tx_id
		WHERE t.seq > ? AND (g.path = ? OR (g.path > ? AND g.path < ?)) ORDER BY t.seq LIMIT 1`)
	if err != nil {
		return nil, fmt.Errorf("find later changes: %w", err)
	}
	defer st.Close()
	for _, p := range paths {
		below := strings.TrimSuffix(p, "/") + "/"
		var id int64
		err := st.QueryRow(seq, p, below, below[:len(below)-1]+"0").Scan(&id)
		if err != nil && err != sql.ErrNoRows {
			return nil, fmt.Errorf("find later changes of %s: %w", p, err)
		}
		out[p] = id
	}
	return out, nil
}

// removeUndoArea removes an undo area. A before-image that carries the
// immutable or append-only flag, which forbid removing its link, has them
// cleared first, unless it has other links: then it is the object undo
// put back (or another name of one), whose flags are not txexec's to
// clear, and the area stays, for a later GCUndo, with an error.
func removeUndoArea(path string) error {
	err := os.RemoveAll(path)
	if err == nil {
		return nil
	}
	filepath.WalkDir(path, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil || !d.Type().IsRegular() && !d.IsDir() {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && (d.IsDir() || st.Nlink == 1) {
			clearFlags(p)
		}
		return nil
	})
	return os.RemoveAll(path)
}
