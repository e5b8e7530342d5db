package store

import (
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
)

// AreaPrefix begins the name of a staging area at the root of a mount
// other than the state directory's: MOUNTPOINT/.txexec-staging-INSTANCE-ID
// (see AddStagingArea).
const AreaPrefix = ".txexec-staging-"

// FaultAreaRegistered is the fault point (see Fault) between recording a
// staging area and creating its directory.
const FaultAreaRegistered = "store.area-registered"

// StagingDir returns the staging directory of transaction id in the state
// directory; Begin creates it. It holds the transaction's staged objects
// for paths on the state directory's mount; AddStagingArea makes the
// areas for other mounts.
func (s *Store) StagingDir(id int64) string {
	return filepath.Join(s.dir, StagingName, strconv.FormatInt(id, 10))
}

// AddStagingArea gives running transaction id a staging area on the mount
// whose root is mountPoint, an absolute path, and returns the area's path:
// the new directory MOUNTPOINT/.txexec-staging-INSTANCE-ID, mode stagingMode(),
// owned by this process's user. Staged objects that shadow paths on that
// mount live there, so that their write-through is a rename within the
// mount (docs/architecture.md §4).
//
// The area is recorded before its directory is made, so that abort,
// recovery and GCStaging remove it whenever a crash comes; mkdir follows
// the commit of the record. A directory already at that path (never made
// by this state directory: ids are not reused) is an error, never adopted.
func (s *Store) AddStagingArea(id int64, mountPoint string) (string, error) {
	if !filepath.IsAbs(mountPoint) || filepath.Clean(mountPoint) != mountPoint {
		return "", fmt.Errorf("add staging area of transaction %d: mount point %q is not absolute and clean", id, mountPoint)
	}
	path := filepath.Join(mountPoint, AreaPrefix+s.instance+"-"+strconv.FormatInt(id, 10))
	err := s.write(func(tx *sql.Tx) error {
		if err := requireRunning(tx, id); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT OR IGNORE INTO staging_area (tx_id, path) VALUES (?, ?)`, id, path)
		return err
	})
	if err != nil {
		return "", notFound("add staging area of", id, err)
	}
	Fault(FaultAreaRegistered)
	if err := os.Mkdir(path, stagingMode()); err != nil {
		return "", fmt.Errorf("create staging area of transaction %d: %w", id, err)
	}
	if err := os.Chmod(path, stagingMode()); err != nil { // whatever the umask
		return "", fmt.Errorf("create staging area of transaction %d: %w", id, err)
	}
	return path, nil
}

// StagingAreas returns every staging directory of transaction id:
// StagingDir(id) first, then its areas on other mounts, by path.
func (s *Store) StagingAreas(id int64) ([]string, error) {
	paths, err := areaPaths(s.db, id)
	if err != nil {
		return nil, fmt.Errorf("staging areas of transaction %d: %w", id, err)
	}
	return append([]string{s.StagingDir(id)}, paths...), nil
}

func areaPaths(q querier, id int64) ([]string, error) {
	return queryAll(q, func(rows *sql.Rows) (p string, err error) {
		err = rows.Scan(&p)
		return p, err
	}, `SELECT path FROM staging_area WHERE tx_id = ? ORDER BY path`, id)
}

// RemoveStaging removes every staging directory of transaction id, its
// staging/ID and its areas on other mounts (absent is fine), and forgets
// the areas. Call it once the transaction is aborted or applied.
func (s *Store) RemoveStaging(id int64) error {
	if err := removeStaged(s.StagingDir(id)); err != nil {
		return fmt.Errorf("remove staging of transaction %d: %w", id, err)
	}
	paths, err := areaPaths(s.db, id)
	if err != nil {
		return fmt.Errorf("remove staging of transaction %d: %w", id, err)
	}
	if len(paths) == 0 {
		return nil
	}
	err = s.write(func(tx *sql.Tx) error {
		for _, p := range paths {
			if err := s.removeArea(tx, id, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove staging of transaction %d: %w", id, err)
	}
	return nil
}

// FreeStaging removes everything in the staging directories of
// transaction id, which must be one that can no longer commit (running,
// and its owner is aborting it or dead), but keeps the directories and
// their records, and writes nothing to the database: on a full disk the
// space its staged objects take is what the store needs to record the
// abort. RemoveStaging removes the directories once the abort is
// recorded.
func (s *Store) FreeStaging(id int64) error {
	paths, err := areaPaths(s.db, id)
	if err != nil {
		return fmt.Errorf("free staging of transaction %d: %w", id, err)
	}
	for _, p := range append([]string{s.StagingDir(id)}, paths...) {
		entries, err := os.ReadDir(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("free staging of transaction %d: %w", id, err)
		}
		for _, e := range entries {
			if err := removeStaged(filepath.Join(p, e.Name())); err != nil {
				return fmt.Errorf("free staging of transaction %d: %w", id, err)
			}
		}
	}
	return nil
}

// removeArea removes the staging area at path of transaction id and, in
// tx, its record. The directory goes first: a crash between the two
// leaves a record of an absent area, which the next removal forgets. A
// durable store fsyncs the mount root that held it before the record
// goes: after a power loss an area whose removal did not last would be
// recorded nowhere, and never removed.
func (s *Store) removeArea(tx *sql.Tx, id int64, path string) error {
	if err := removeStaged(path); err != nil {
		return err
	}
	if s.opt.Durable {
		if err := sysx.Sync([]sysx.SyncTarget{{Path: filepath.Dir(path), Dir: true}}); err != nil {
			return err
		}
	}
	_, err := tx.Exec(`DELETE FROM staging_area WHERE tx_id = ? AND path = ?`, id, path)
	return err
}

// GCStaging removes the staging directories and areas of transactions
// that are aborted or applied, and the staging directories of ids the
// store does not know (left by a crash inside Begin), and returns their
// ids in increasing order. Entries of the staging directory whose names
// are not ids are left alone; an area that cannot be removed stays
// recorded, for the next GCStaging. It holds the write lock throughout, so
// it cannot remove the directory of a transaction being begun, nor an area
// being added (only a running transaction gets one).
func (s *Store) GCStaging() ([]int64, error) {
	removed := map[int64]bool{}
	err := s.write(func(tx *sql.Tx) error {
		entries, err := os.ReadDir(filepath.Join(s.dir, StagingName))
		if err != nil {
			return err
		}
		live, err := liveIDs(tx)
		if err != nil {
			return err
		}
		for _, e := range entries {
			id, err := strconv.ParseInt(e.Name(), 10, 64)
			if err != nil || id <= 0 || strconv.FormatInt(id, 10) != e.Name() || live[id] {
				continue
			}
			if err := removeStaged(s.StagingDir(id)); err != nil {
				return err
			}
			removed[id] = true
		}
		areas, err := finishedAreas(tx)
		if err != nil {
			return err
		}
		for _, a := range areas {
			// One that cannot be removed now (its mount is gone
			// read-only, say) stays recorded for the next GC: it must
			// not stop recovery, which runs GCStaging.
			if s.removeArea(tx, a.id, a.path) == nil {
				removed[a.id] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gc staging: %w", err)
	}
	ids := make([]int64, 0, len(removed))
	for id := range removed {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// liveIDs returns the transactions whose staging is still needed:
// running, kept or committed.
func liveIDs(tx *sql.Tx) (map[int64]bool, error) {
	ids, err := queryAll(tx, func(rows *sql.Rows) (id int64, err error) {
		err = rows.Scan(&id)
		return id, err
	}, `SELECT id FROM tx WHERE state IN (?, ?, ?)`, StateRunning, StateKept, StateCommitted)
	live := make(map[int64]bool, len(ids))
	for _, id := range ids {
		live[id] = true
	}
	return live, err
}

type areaRecord struct {
	id   int64
	path string
}

// finishedAreas returns the staging areas of aborted and applied
// transactions.
func finishedAreas(tx *sql.Tx) ([]areaRecord, error) {
	return queryAll(tx, func(rows *sql.Rows) (a areaRecord, err error) {
		err = rows.Scan(&a.id, &a.path)
		return a, err
	}, `SELECT a.tx_id, a.path FROM staging_area a JOIN tx t ON t.id = a.tx_id
		WHERE t.state IN (?, ?) ORDER BY a.tx_id, a.path`, StateAborted, StateApplied)
}

// removeStaged removes a staging directory or area. Staged objects may
// carry the immutable or append-only flag (chattr +i, +a by the
// transaction, which commit moves to the write-through, but an aborted
// transaction never gets there), which forbids removing them or their
// entries: those flags are cleared, then the removal is tried again.
func removeStaged(path string) error {
	err := os.RemoveAll(path)
	if err == nil {
		return nil
	}
	filepath.WalkDir(path, func(p string, d fs.DirEntry, werr error) error {
		if werr == nil && (d.Type().IsRegular() || d.IsDir()) {
			clearFlags(p)
		}
		return nil
	})
	return os.RemoveAll(path)
}

// clearFlags clears the immutable and append-only flags of the regular
// file or directory p, if it has them.
func clearFlags(p string) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	sysx.ChangeInodeFlags(fd, 0, FlagImmutable|FlagAppend)
}
