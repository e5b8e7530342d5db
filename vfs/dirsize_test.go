package vfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestDirSizeFollowsEntries: a directory's size in the view is what the
// host file system shows for a directory that had the same entries made in
// it: one the transaction made, and a host one; removing them does not
// shrink it where the file system does not.
func TestDirSizeFollowsEntries(t *testing.T) {
	e := newEnv(t, func(dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "old"), 0o755)) })
	native := filepath.Join(t.TempDir(), "native")
	require.NoError(t, os.Mkdir(native, 0o755))
	var sfs unix.Statfs_t
	require.NoError(t, unix.Statfs(native, &sfs))
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("entry-with-a-longer-name-%d", i)
		require.NoError(t, os.WriteFile(filepath.Join(native, names[i]), nil, 0o644))
	}
	var want unix.Stat_t
	require.NoError(t, unix.Stat(native, &want))

	e.must(e.v.Mkdir(e.c, e.c.Cwd, "new", 0o755), "mkdir")
	for _, d := range []string{"new", "old"} {
		for _, name := range names {
			e.create(d+"/"+name, "", 0o644)
		}
		st, err := e.v.Stat(e.c, e.c.Cwd, d, 0)
		require.NoError(t, err)
		assert.Equal(t, want.Size, st.Size, d)
		stx, err := e.v.Statx(e.c, e.c.Cwd, d, 0, unix.STATX_BASIC_STATS)
		require.NoError(t, err)
		assert.Equal(t, uint64(want.Size), stx.Size, d)
	}
	for _, name := range names {
		e.must(e.v.Unlink(e.c, e.c.Cwd, "old/"+name, 0), "unlink")
		require.NoError(t, os.Remove(filepath.Join(native, name)))
	}
	require.NoError(t, unix.Stat(native, &want))
	st, err := e.v.Stat(e.c, e.c.Cwd, "old", 0)
	require.NoError(t, err)
	assert.Equal(t, want.Size, st.Size, "after removing the entries")
}

// TestDirSizeOfLargeHostDirectory: a large host directory whose names were
// made in another order than its listing's keeps its own size, plus what
// the transaction's entries add: a shadow filled in listing order comes out
// larger than it, and would show a size Linux never would.
func TestDirSizeOfLargeHostDirectory(t *testing.T) {
	const count = 3000
	build := func(dir string) {
		require.NoError(t, os.Mkdir(dir, 0o755))
		for i := range count {
			require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("page-%05d.1.gz", i)), nil, 0o644))
		}
	}
	e := newEnv(t, func(dir string) { build(filepath.Join(dir, "man1")) })
	var sfs unix.Statfs_t
	require.NoError(t, unix.Statfs(e.dir, &sfs))
	if sfs.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs sizes count entries; the layout question does not arise")
	}
	// The same directory made the same way, natively, with the same
	// changes made to it.
	native := filepath.Join(t.TempDir(), "man1")
	build(native)
	var host unix.Stat_t
	require.NoError(t, unix.Stat(native, &host))

	for _, added := range []int{1, 5} {
		for i := range added {
			name := fmt.Sprintf("new-page-%d.1.gz", i)
			if _, err := os.Stat(filepath.Join(native, name)); err == nil {
				continue
			}
			require.NoError(t, os.WriteFile(filepath.Join(native, name), nil, 0o644))
			e.create("man1/"+name, "", 0o644)
		}
		var want unix.Stat_t
		require.NoError(t, unix.Stat(native, &want))
		st, err := e.v.Stat(e.c, e.c.Cwd, "man1", 0)
		require.NoError(t, err)
		assert.Equal(t, want.Size, st.Size, "%d names added (host directory %d bytes)", added, host.Size)
	}
}
