package sysx

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// recordSyncs makes SyncHook record the paths fsynced, and fail those
// fail names with EIO.
func recordSyncs(t *testing.T, fail ...string) func() []string {
	var mu sync.Mutex
	var got []string
	SyncHook = func(path string) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, path)
		for _, f := range fail {
			if f == path {
				return unix.EIO
			}
		}
		return nil
	}
	t.Cleanup(func() { SyncHook = nil })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestSyncTargets: Sync fsyncs regular files and directories, each once,
// and leaves alone what is not there to sync: an absent path, another
// inode than the one expected, a directory where a file was expected with
// an inode, a symlink, a FIFO (never opened: that could block), and a
// file where a directory is required.
func TestSyncTargets(t *testing.T) {
	dir := t.TempDir()
	file, other, fifo, link := filepath.Join(dir, "f"), filepath.Join(dir, "o"), filepath.Join(dir, "p"), filepath.Join(dir, "l")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(other, []byte("y"), 0o644))
	require.NoError(t, unix.Mkfifo(fifo, 0o644))
	require.NoError(t, os.Symlink(file, link))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(file, &st))
	tests := []struct {
		name   string
		target SyncTarget
		synced bool
	}{
		{"a file", SyncTarget{Path: file}, true},
		{"the file of the expected inode", SyncTarget{Path: file, Ino: st.Ino}, true},
		{"a directory as such", SyncTarget{Path: dir, Dir: true}, true},
		{"a directory where either will do", SyncTarget{Path: dir}, true},
		{"another inode", SyncTarget{Path: other, Ino: st.Ino}, false},
		{"absent", SyncTarget{Path: filepath.Join(dir, "gone")}, false},
		{"under a file", SyncTarget{Path: filepath.Join(file, "x"), Dir: true}, false},
		{"a file where a directory is required", SyncTarget{Path: file, Dir: true}, false},
		{"a FIFO", SyncTarget{Path: fifo}, false},
		{"a symlink", SyncTarget{Path: link}, false},
		{"a symlink where a directory is required", SyncTarget{Path: link, Dir: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synced := recordSyncs(t)
			require.NoError(t, Sync([]SyncTarget{tt.target}))
			if tt.synced {
				assert.Equal(t, []string{tt.target.Path}, synced())
			} else {
				assert.Empty(t, synced())
			}
		})
	}
}

// TestSyncFailure: a failed fsync is Sync's error, as a *os.PathError
// that names the path and wraps the errno, after every other fsync was
// made: the first failure in the order of the targets.
func TestSyncFailure(t *testing.T) {
	dir := t.TempDir()
	var targets []SyncTarget
	for _, n := range []string{"a", "b", "c", "d"} {
		p := filepath.Join(dir, n)
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		targets = append(targets, SyncTarget{Path: p})
	}
	synced := recordSyncs(t, targets[1].Path, targets[3].Path)
	err := Sync(targets)
	var pe *os.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "fsync", pe.Op)
	assert.Equal(t, targets[1].Path, pe.Path)
	assert.ErrorIs(t, err, unix.EIO)
	assert.Len(t, synced(), 4, "every fsync made")
}

// TestFailSyncEnv: FailSyncEnv fails the fsyncs of paths that contain its
// substring, all of them or only the N-th.
func TestFailSyncEnv(t *testing.T) {
	tests := []struct {
		env  string
		path string
		want []bool // one fsync after another of path
	}{
		{"", "/a/staging/1", []bool{false, false}},
		{"/staging/", "/a/staging/1", []bool{true, true, true}},
		{"/staging/", "/a/work/1", []bool{false}},
		{"/staging/@2", "/a/staging/1", []bool{false, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.env+" "+tt.path, func(t *testing.T) {
			t.Setenv(FailSyncEnv, tt.env)
			failSync.Lock()
			failSync.hits = 0
			failSync.Unlock()
			var got []bool
			for range tt.want {
				got = append(got, injectedSyncError(tt.path) == unix.EIO)
			}
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("a bad count", func(t *testing.T) {
		t.Setenv(FailSyncEnv, "x@0")
		assert.PanicsWithValue(t, FailSyncEnv+"=x@0: the count after @ must be a positive number",
			func() { injectedSyncError("x") })
	})
}

// TestSyncManyFilesFewDescriptors: Sync of more files than the process
// may have descriptors open (RLIMIT_NOFILE) syncs them all: it holds a
// bounded number open at once, not one per target, so that a durable
// commit of many staged files, or its write-through, does not fail with
// EMFILE (the write-through, committed, would fail again at every
// recovery).
func TestSyncManyFilesFewDescriptors(t *testing.T) {
	dir := t.TempDir()
	const n = 1500
	targets := make([]SyncTarget, n)
	for i := range targets {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
		targets[i] = SyncTarget{Path: p}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	low := unix.Rlimit{Cur: uint64(len(ents)) + 400, Max: old.Max}
	require.Less(t, low.Cur, uint64(n), "the limit must be below the number of files")
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &low))
	err = Sync(targets)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old))
	require.NoError(t, err)
	synced := recordSyncs(t)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &low))
	err = Sync(targets)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old))
	require.NoError(t, err)
	assert.Len(t, synced(), n, "every file fsynced once")
}
