package vfs

import (
	"fmt"
	"maps"
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

// TestDirSizeDeferredShadow: a large host directory that only lost names
// shows its own size without a shadow; once the view holds a name the host
// directory does not, the shadow made then went through the same steps as
// one made at the first stat (the host names in listing order, the names
// removed since in their order, then the changes since), and the size is
// what that shadow shows: an oracle makes those steps in a directory of
// the same file system.
func TestDirSizeDeferredShadow(t *testing.T) {
	const count = 3000
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "man1"), 0o755))
		for i := range count {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "man1", fmt.Sprintf("page-%05d.1.gz", i)), nil, 0o644))
		}
	})
	man1 := filepath.Join(e.dir, "man1")
	var sfs unix.Statfs_t
	require.NoError(t, unix.Statfs(man1, &sfs))
	if sfs.Type == unix.TMPFS_MAGIC {
		t.Skip("on tmpfs the shadow is made at the first stat: sizes count entries")
	}
	var host unix.Stat_t
	require.NoError(t, unix.Stat(man1, &host))

	// The oracle: a shadow made the way the first stat made it.
	f, err := os.Open(man1)
	require.NoError(t, err)
	order, err := f.Readdirnames(-1) // the host's order, not sorted
	f.Close()
	require.NoError(t, err)
	oracle := filepath.Join(t.TempDir(), "shadow")
	require.NoError(t, os.Mkdir(oracle, 0o700))
	target := filepath.Join(filepath.Dir(oracle), "target")
	require.NoError(t, os.WriteFile(target, nil, 0o600))
	inOracle := map[string]bool{}
	for _, name := range order {
		require.NoError(t, os.Link(target, filepath.Join(oracle, name)))
		inOracle[name] = true
	}
	var st unix.Stat_t
	require.NoError(t, unix.Stat(oracle, &st))
	base := st.Size
	inView := maps.Clone(inOracle)
	// One period between stats: the changes in order, then the stat;
	// the oracle syncs as the shadow does, by each name's first change.
	var log []string
	add := func(name string) {
		e.create("man1/"+name, "", 0o644)
		inView[name] = true
		log = append(log, name)
	}
	remove := func(name string) {
		e.must(e.v.Unlink(e.c, e.c.Cwd, "man1/"+name, 0), "unlink")
		delete(inView, name)
		log = append(log, name)
	}
	stat := func(what string) {
		for _, name := range log {
			switch {
			case inView[name] && !inOracle[name]:
				require.NoError(t, os.Link(target, filepath.Join(oracle, name)))
				inOracle[name] = true
			case !inView[name] && inOracle[name]:
				require.NoError(t, os.Remove(filepath.Join(oracle, name)))
				delete(inOracle, name)
			}
		}
		log = nil
		require.NoError(t, unix.Stat(oracle, &st))
		want := host.Size + max(0, st.Size-base)
		got, err := e.v.Stat(e.c, e.c.Cwd, "man1", 0)
		require.NoError(t, err)
		assert.Equal(t, want, got.Size, what)
	}
	shadow := func() *dirShadow {
		e.v.mu.Lock()
		defer e.v.mu.Unlock()
		return e.v.dirShadows[e.v.nodes[FileID{Dev: host.Dev, Ino: host.Ino}]]
	}

	for i := 0; i < 400; i += 10 {
		remove(order[i])
	}
	stat("host names removed")
	require.True(t, shadow().deferred, "no shadow for a directory that only lost names")
	assert.Equal(t, -1, shadow().fd)
	for i := 400; i < 450; i += 10 {
		remove(order[i])
	}
	stat("more removed")
	require.True(t, shadow().deferred)

	for i := range 300 {
		add(fmt.Sprintf("new-page-with-a-longer-name-%04d.1.gz", i))
		if i%30 == 0 {
			remove(order[1000+i])
		}
	}
	for i := 0; i < 100; i += 20 {
		add(order[i]) // removed in the first period, made again
	}
	stat("names added, others removed and made again")
	require.False(t, shadow().deferred, "made at the first name the host directory lacks")
	assert.Equal(t, inView, shadow().names, "the shadow holds the view's names")

	for i := 2000; i < 2300; i++ {
		remove(order[i])
	}
	add("one-more.1.gz")
	stat("after the shadow was made")
	assert.Equal(t, inView, shadow().names)
}

// TestDropDirShadows: at the end of the transaction the shadow directories
// go, in the background, and are gone when the wait returns; the staging
// area keeps everything else.
func TestDropDirShadows(t *testing.T) {
	e := newEnv(t, func(dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755)) })
	for i := range 100 {
		e.create(fmt.Sprintf("d/f%03d", i), "x", 0o644)
	}
	e.must(e.v.Mkdir(e.c, e.c.Cwd, "new", 0o755), "mkdir")
	e.create("new/f", "", 0o644)
	for _, d := range []string{"d", "new"} {
		_, err := e.v.Stat(e.c, e.c.Cwd, d, 0)
		require.NoError(t, err)
	}
	shadows := func() []string {
		m, err := filepath.Glob(filepath.Join(e.v.home.path, "dirsize-*"))
		require.NoError(t, err)
		var dirs []string
		for _, p := range m {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				dirs = append(dirs, p)
			}
		}
		return dirs
	}
	require.Len(t, shadows(), 2)
	before, err := os.ReadDir(e.v.home.path)
	require.NoError(t, err)

	wait := e.v.DropDirShadows()
	wait()
	assert.Empty(t, shadows())
	after, err := os.ReadDir(e.v.home.path)
	require.NoError(t, err)
	assert.Len(t, after, len(before)-2, "only the shadow directories went")
	e.v.DropDirShadows()() // nothing left to drop
}
