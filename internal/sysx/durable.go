package sysx

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A SyncTarget is one object whose data and attributes (a regular file)
// or entries and attributes (a directory) Sync makes durable.
type SyncTarget struct {
	// Path is the object's absolute host path; it may be longer than
	// PATH_MAX (see ShortPath).
	Path string
	// Dir says it must be a directory; otherwise it may be a regular
	// file or a directory (nothing else can be opened safely to fsync:
	// a symlink, FIFO or device is durable with its directory's entry
	// on the file systems txexec supports).
	Dir bool
	// Ino, when not 0, is the inode the object must still be: one that
	// is absent, of another type or another inode is not synced (whoever
	// replaced or removed it changed its directory, which is synced too).
	Ino uint64
}

// SyncHook, when set (tests), is called with the path of every object Sync
// is about to fsync, from several goroutines at once; an error it returns
// is that fsync's result, as if the kernel had failed it.
var SyncHook func(path string) error

// FailSyncEnv names the environment variable that makes chosen fsyncs of
// Sync fail with EIO, for tests of what a failing disk does to a commit:
// "SUBSTRING" fails every fsync of a path that contains SUBSTRING,
// "SUBSTRING@N" only the N-th such fsync of the process (N counts from 1).
const FailSyncEnv = "TXEXEC_FAIL_FSYNC"

var failSync struct {
	sync.Mutex
	hits int
}

// injectedSyncError is the EIO FailSyncEnv asks for on path, or nil.
func injectedSyncError(path string) error {
	v := os.Getenv(FailSyncEnv)
	if v == "" {
		return nil
	}
	sub, nth := v, 0
	if i := strings.LastIndexByte(v, '@'); i >= 0 {
		n, err := strconv.Atoi(v[i+1:])
		if err != nil || n < 1 {
			panic(FailSyncEnv + "=" + v + ": the count after @ must be a positive number")
		}
		sub, nth = v[:i], n
	}
	if !strings.Contains(path, sub) {
		return nil
	}
	failSync.Lock()
	failSync.hits++
	hit := nth == 0 || failSync.hits == nth
	failSync.Unlock()
	if !hit {
		return nil
	}
	return unix.EIO
}

// syncWorkers is how many fsyncs Sync keeps in flight. A journaling file
// system commits the fsyncs that wait together in one journal commit, so
// that n files in flight cost about one commit, not n; a few more than
// the journal needs gain nothing.
const syncWorkers = 16

// syncAhead bounds how many targets Sync has opened, and started the
// write-back of, before their fsync: far enough ahead that the fsyncs in
// flight find their data written or on its way, without holding a
// descriptor per target (a commit of more files than RLIMIT_NOFILE allows
// would fail with EMFILE).
const syncAhead = 256

// Sync makes every target durable: each regular file's data and
// attributes, each directory's entries and attributes (fsync(2)). It
// opens the targets in order, starting the write-back of each file's data
// as it opens it (sync_file_range SYNC_FILE_RANGE_WRITE, which returns
// without waiting), and fsyncs them from several goroutines, each on the
// descriptor opened for it, with at most syncAhead opened and not yet
// fsynced. It returns the first failure in the order of targets, after
// every fsync has returned: a failed fsync is never retried here, since
// the kernel may have dropped the data it could not write (and reports
// that once); the caller must write the data again or give up.
func Sync(targets []SyncTarget) error {
	if len(targets) == 0 {
		return nil
	}
	type opened struct{ i, fd int }
	errs := make([]error, len(targets))
	next := make(chan opened, syncAhead)
	var wg sync.WaitGroup
	for w := 0; w < min(syncWorkers, len(targets)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range next {
				errs[o.i] = fsyncTarget(targets[o.i].Path, o.fd)
				unix.Close(o.fd)
			}
		}()
	}
	for i, t := range targets {
		fd, err := openToSync(t)
		if fd < 0 {
			errs[i] = err
			continue
		}
		if !t.Dir {
			// Only a hint: the fsync reports what failed.
			unix.SyncFileRange(fd, 0, 0, unix.SYNC_FILE_RANGE_WRITE)
		}
		next <- opened{i, fd}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// fsyncTarget fsyncs fd, open on path, through SyncHook and FailSyncEnv.
func fsyncTarget(path string, fd int) error {
	err := injectedSyncError(path)
	if err == nil && SyncHook != nil {
		err = SyncHook(path)
	}
	if err == nil {
		err = Retry(func() error { return unix.Fsync(fd) })
	}
	if err != nil {
		return &os.PathError{Op: "fsync", Path: path, Err: err}
	}
	return nil
}

// openToSync opens t for fsync, read-only; -1 with no error when it is not
// there to sync (absent, replaced by another inode or type).
func openToSync(t SyncTarget) (int, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY
	if t.Dir {
		flags |= unix.O_DIRECTORY
	}
	name, done, err := ShortPath(t.Path)
	if err != nil {
		return -1, skipGone(t.Path, err)
	}
	defer done()
	if !t.Dir {
		// A FIFO or device must not be opened: look first.
		var st unix.Stat_t
		if err := Retry(func() error { return unix.Lstat(name, &st) }); err != nil {
			return -1, skipGone(t.Path, err)
		}
		typ := st.Mode & unix.S_IFMT
		if typ != unix.S_IFREG && typ != unix.S_IFDIR || t.Ino != 0 && st.Ino != t.Ino {
			return -1, nil
		}
		if typ == unix.S_IFDIR {
			flags |= unix.O_DIRECTORY
		}
	}
	var fd int
	err = Retry(func() error {
		var err error
		fd, err = unix.Open(name, flags, 0)
		return err
	})
	if err != nil {
		return -1, skipGone(t.Path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "fstat", Path: t.Path, Err: err}
	}
	typ := uint32(unix.S_IFREG)
	if flags&unix.O_DIRECTORY != 0 {
		typ = unix.S_IFDIR
	}
	if st.Mode&unix.S_IFMT != typ || t.Ino != 0 && st.Ino != t.Ino {
		unix.Close(fd)
		return -1, nil
	}
	return fd, nil
}

// skipGone is nil for the errors of an object that is not there (removed,
// or replaced: by a symlink, ELOOP; by a non-directory, ENOTDIR), else
// err as a *os.PathError.
func skipGone(path string, err error) error {
	switch err {
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP:
		return nil
	}
	return &os.PathError{Op: "open to fsync", Path: path, Err: err}
}
