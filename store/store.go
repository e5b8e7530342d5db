package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"txexec/internal/sysx"

	"github.com/mattn/go-sqlite3" // also registers the "sqlite3" driver
	"golang.org/x/sys/unix"
)

// DefaultBusyTimeout is how long a statement waits for the database lock
// held by another connection (or another txexec process) before failing.
// Committers serialize on that lock, so it is generous.
const DefaultBusyTimeout = 60 * time.Second

// DBName is the database file inside the state directory; StagingName is
// the directory that holds one staging directory per transaction.
const (
	DBName      = "txexec.db"
	StagingName = "staging"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options configure a Store.
type Options struct {
	// Durable makes every commit reach stable storage before it returns
	// (synchronous=FULL); otherwise SQLite does not fsync (synchronous=OFF).
	Durable bool
	// Now is the clock for recorded times; time.Now when nil.
	Now func() time.Time
	// Owner is this process, recorded as the owner of the transactions it
	// begins, commits or claims; {Pid: os.Getpid()} when zero.
	Owner Owner
}

// Store is the state directory: the SQLite database and the staging area.
// It is safe for concurrent use, also by several processes on one
// directory.
type Store struct {
	dir string
	db  *sql.DB
	opt Options
	// instance names this state directory in the names of its staging
	// areas on other mounts (AddStagingArea).
	instance string

	// commitMu serializes this process's committers before they queue on
	// SQLite's write lock, which only polls.
	commitMu sync.Mutex
}

// Open opens (creating if needed) the store in dir and brings its schema
// up to date.
func Open(dir string, opt Options) (*Store, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Owner == (Owner{}) {
		opt.Owner = Owner{Pid: os.Getpid()}
	}
	for _, d := range []string{dir, filepath.Join(dir, StagingName)} {
		if err := mkdirAll(d, opt.Durable); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		if err := searchable(d); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	db, err := openDB(dsn(filepath.Join(dir, DBName), opt.Durable), opt.Durable)
	if err != nil && isNoSpace(err) && releaseReserve(dir) {
		// SQLite makes its -wal and -shm files at the first open.
		db, err = openDB(dsn(filepath.Join(dir, DBName), opt.Durable), opt.Durable)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	// The history (commands, paths, attribute values) is the owner's
	// alone, whatever the umask and whoever may search the directory.
	for _, f := range []string{DBName, DBName + "-wal", DBName + "-shm"} {
		if err := os.Chmod(filepath.Join(dir, f), 0o600); err != nil && !os.IsNotExist(err) {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", dir, err)
		}
	}
	s := &Store{dir: dir, db: db, opt: opt}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if err := db.QueryRow(`SELECT name FROM instance`).Scan(&s.instance); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: read instance: %w", dir, err)
	}
	keepReserve(dir)
	return s, nil
}

// mkdirAll makes dir and its missing parents, like os.MkdirAll. When
// durable, the entry of each directory it made is fsynced in its parent
// before it returns: SQLite syncs the directory its database and WAL are
// in, but not that directory's own entry, so a power cut after the first
// commits on a new state directory could otherwise lose the whole store
// while the write-through they did survives.
func mkdirAll(dir string, durable bool) error {
	var made []string // outermost first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append([]string{d}, made...)
	}
	if err := os.MkdirAll(dir, stagingMode()); err != nil {
		return err
	}
	if !durable || len(made) == 0 {
		return nil
	}
	var parents []sysx.SyncTarget
	for _, d := range made {
		parents = append(parents, sysx.SyncTarget{Path: filepath.Dir(d), Dir: true})
	}
	return sysx.Sync(parents)
}

// dsn builds the go-sqlite3 data source name. The pragmas are applied to
// every connection of the pool. _txlock=immediate makes every sql.Tx start
// with BEGIN IMMEDIATE: it takes the write lock at once (waiting up to the
// busy timeout) instead of failing with SQLITE_BUSY when a read
// transaction later tries to upgrade. journal_mode is not among them: WAL
// is a property of the database file, set once by openDB, and changing it
// on every new connection can fail with SQLITE_BUSY without waiting.
func dsn(path string, durable bool) string {
	syncMode := "OFF"
	if durable {
		syncMode = "FULL"
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(DefaultBusyTimeout.Milliseconds(), 10))
	q.Set("_synchronous", syncMode)
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// openDB opens the database, puts it in WAL mode and checks the pragmas
// the store relies on.
func openDB(dsn string, durable bool) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	if err := setWAL(db); err != nil {
		db.Close()
		return nil, err
	}
	if err := checkPragmas(db, durable); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// setWAL switches the database file to WAL mode. Switching needs an
// exclusive lock and SQLite answers SQLITE_BUSY at once, without its busy
// handler, when several processes open a new database together: retry for
// up to DefaultBusyTimeout.
func setWAL(db *sql.DB) error {
	deadline := time.Now().Add(DefaultBusyTimeout)
	for {
		var mode string
		err := db.QueryRow("PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("set journal_mode: %w", err)
			}
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

func checkPragmas(db *sql.DB, durable bool) error {
	wantSync := 0 // OFF
	if durable {
		wantSync = 2 // FULL
	}
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, not wal", mode)
	}
	for _, p := range []struct {
		name string
		want int
	}{
		{"synchronous", wantSync},
		{"foreign_keys", 1},
		{"busy_timeout", int(DefaultBusyTimeout.Milliseconds())},
	} {
		var got int
		if err := db.QueryRow("PRAGMA " + p.name).Scan(&got); err != nil {
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		if got != p.want {
			return fmt.Errorf("%s is %d, not %d", p.name, got, p.want)
		}
	}
	return nil
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, each in its own write transaction, so that processes
// opening the store at once apply each exactly once.
func (s *Store) migrate() error {
	if _, err := s.db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_ns INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	known := 0
	for _, name := range names {
		base := filepath.Base(name)
		version, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with a number: %w", base, err)
		}
		known = max(known, version)
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		err = s.write(func(tx *sql.Tx) error {
			var applied string
			switch err := tx.QueryRow(`SELECT name FROM schema_migrations WHERE version = ?`, version).Scan(&applied); {
			case err == sql.ErrNoRows:
			case err != nil:
				return err
			case applied == base:
				return nil
			default:
				// Same number, other schema: going on would fail
				// later, at a commit, after the command's work.
				return fmt.Errorf("%w: its schema step %d is %s, this txexec's is %s", errForeignSchema, version, applied, base)
			}
			if _, err := tx.Exec(string(body)); err != nil {
				return err
			}
			_, err := tx.Exec(`INSERT INTO schema_migrations (version, name, applied_ns) VALUES (?, ?, ?)`,
				version, base, s.opt.Now().UnixNano())
			return err
		})
		if err != nil {
			if errors.Is(err, errForeignSchema) {
				return err
			}
			return fmt.Errorf("migrate %s: %w", base, err)
		}
	}
	var newest int
	var newestName string
	if err := s.db.QueryRow(`SELECT version, name FROM schema_migrations ORDER BY version DESC LIMIT 1`).Scan(&newest, &newestName); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	if newest > known {
		return fmt.Errorf("%w: it has schema step %s, newer than this txexec knows", errForeignSchema, newestName)
	}
	return nil
}

// errForeignSchema is a state database written by another build of
// txexec. Nothing is changed in it: its transactions are recovered by
// the build that wrote them.
var errForeignSchema = errors.New("the state database was made by another version of txexec (recover its transactions with that version, then move it aside)")

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// write runs fn in one write transaction (BEGIN IMMEDIATE, see dsn) and
// commits it when fn returns nil. An error of a full disk wraps
// unix.ENOSPC too (see noSpace); the first one gives up the reserve
// (ReserveName) and runs fn again, in a new transaction: fn must not keep
// anything of a first run that failed.
func (s *Store) write(fn func(tx *sql.Tx) error) error {
	err := s.writeOnce(fn)
	if isNoSpace(err) && releaseReserve(s.dir) {
		err = s.writeOnce(fn)
	}
	return err
}

func (s *Store) writeOnce(fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return noSpace(fmt.Errorf("begin immediate: %w", err))
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return noSpace(err)
	}
	if err := tx.Commit(); err != nil {
		return noSpace(fmt.Errorf("commit: %w", err))
	}
	return nil
}

// noSpace makes err, when it is SQLite's for a full disk (SQLITE_FULL, or
// an I/O error whose errno is ENOSPC), wrap unix.ENOSPC as well, so that
// callers that know no SQL can tell it: a change that cannot be recorded
// for want of space then fails as Linux fails one on a full disk.
func noSpace(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrFull || se.SystemErrno == unix.ENOSPC) &&
		!errors.Is(err, unix.ENOSPC) {
		return fmt.Errorf("%w (%w)", err, unix.ENOSPC)
	}
	return err
}

// notFound turns sql.ErrNoRows into ErrNotFound for transaction id.
func notFound(op string, id int64, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s transaction %d: %w", op, id, ErrNotFound)
	}
	return fmt.Errorf("%s transaction %d: %w", op, id, err)
}

// stagingMode is the mode of the state directory and the staging
// directories. Run as root, txexec supervises processes of other users,
// which must be able to execute programs the transaction staged: the
// kernel walks the staged path for them. So the directories are searchable
// by everyone (never listable, and staged objects have unguessable names:
// vfs.Tx.newStagedNameLocked); otherwise they are the owner's alone.
func stagingMode() os.FileMode {
	if os.Geteuid() == 0 {
		return 0o711
	}
	return 0o700
}

// searchable gives directory d the search permissions stagingMode asks for
// (a state directory made by an earlier version, or by the user, may lack
// them); it never takes permissions away.
func searchable(d string) error {
	fi, err := os.Stat(d)
	if err != nil {
		return err
	}
	if want := fi.Mode().Perm() | stagingMode()&0o111; want != fi.Mode().Perm() {
		return os.Chmod(d, want)
	}
	return nil
}
