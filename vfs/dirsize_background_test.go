package vfs

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// newEnvUnder is newEnv with the host tree and the staging area in
// temporary directories under root, which must be on a file system of
// type fsType (else the test is skipped); the host tree is hostDir when
// set (a second view over another env's tree), else built with build.
func newEnvUnder(t *testing.T, root string, fsType int64, hostDir string, build func(dir string)) *env {
	t.Helper()
	var sfs unix.Statfs_t
	if err := unix.Statfs(root, &sfs); err != nil || sfs.Type != fsType {
		t.Skipf("%s is not on the file system this case is for (type %#x)", root, fsType)
	}
	mkTemp := func() string {
		d, err := os.MkdirTemp(root, "txexec-dirsize-test-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	dir := hostDir
	if dir == "" {
		dir = mkTemp()
		build(dir)
	}
	return envOver(t, dir, mkTemp())
}

// buildMan1 makes a host directory man1 of count names in dir.
func buildMan1(t *testing.T, count int) func(dir string) {
	return func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "man1"), 0o755))
		for i := range count {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "man1", fmt.Sprintf("page-%05d.1.gz", i)), nil, 0o644))
		}
	}
}

// shadowOf is the shadow of directory name in e (one of that name), nil
// if none.
func (e *env) shadowOf(name string) *dirShadow {
	e.v.mu.Lock()
	defer e.v.mu.Unlock()
	for n, s := range e.v.dirShadows {
		if n.name == name {
			return s
		}
	}
	return nil
}

// holdBuilds makes background builds wait, once they have their host
// names, until the returned function is called; started receives once
// for each build that reached that point.
func holdBuilds(t *testing.T, fail error) (started chan struct{}, release func()) {
	started, gate := make(chan struct{}, 8), make(chan struct{})
	testHookShadowBuild = func() error {
		started <- struct{}{}
		<-gate
		return fail
	}
	released := false
	release = func() {
		if !released {
			released = true
			close(gate)
		}
	}
	// Views close (and wait for their builds) in cleanups registered
	// later, so run before this one.
	t.Cleanup(func() { release(); testHookShadowBuild = nil })
	return started, release
}

// statWhileHeld stats path in e while a build is held by release's gate,
// and releases it only once the stat holds the view's lock (waiting for
// the build): the stat races the build for certain.
func statWhileHeld(e *env, path string, release func()) unix.Stat_t {
	e.t.Helper()
	go func() {
		for e.v.mu.TryLock() {
			e.v.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		release()
	}()
	st, err := e.v.Stat(e.c, e.c.Cwd, path, 0)
	require.NoError(e.t, err)
	return st
}

// TestDirSizeBackgroundBuild: a large host directory's shadow, built in
// the background from the first name the view gains there, shows the
// same sizes as the shadow made at the first stat, on ext4 and on tmpfs:
// with host names removed before the gain, names added before and after
// the build ends, and a stat that races the build.
func TestDirSizeBackgroundBuild(t *testing.T) {
	const count = 3000
	for _, fs := range []struct {
		name string
		root string
		typ  int64
	}{
		{"ext4", "/var/tmp", unix.EXT4_SUPER_MAGIC},
		{"tmpfs", tmpfsDir(t), unix.TMPFS_MAGIC},
	} {
		for _, when := range []string{"build ended", "stat at once", "stat while held"} {
			t.Run(fs.name+"/"+when, func(t *testing.T) {
				// The same steps in two views over one host tree.
				steps := func(e *env, background bool) []int64 {
					var sizes []int64
					stat := func() {
						st, err := e.v.Stat(e.c, e.c.Cwd, "man1", 0)
						require.NoError(t, err)
						sizes = append(sizes, st.Size)
					}
					var release func()
					if background && when == "stat while held" {
						_, release = holdBuilds(t, nil)
					}
					for i := 0; i < 300; i += 7 {
						e.must(e.v.Unlink(e.c, e.c.Cwd, fmt.Sprintf("man1/page-%05d.1.gz", i), 0), "unlink")
					}
					s := e.shadowOf("man1")
					require.NotNil(t, s)
					assert.Nil(t, s.build, "no build for a directory that only lost names")
					for i := range 40 {
						e.create(fmt.Sprintf("man1/new-page-with-a-longer-name-%03d.1.gz", i), "", 0o644)
					}
					if background {
						require.NotNil(t, s.build, "built in the background from the first gain")
						if when == "build ended" {
							<-s.build.done
						}
					}
					if background && when == "stat while held" {
						sizes = append(sizes, statWhileHeld(e, "man1", release).Size)
					} else {
						stat()
					}
					assert.Nil(t, s.build)
					assert.False(t, s.deferred)
					for i := range 1500 {
						e.create(fmt.Sprintf("man1/later-page-with-a-much-longer-name-to-make-the-directory-grow-%04d.1.gz", i), "", 0o644)
						if i%40 == 0 {
							e.must(e.v.Unlink(e.c, e.c.Cwd, fmt.Sprintf("man1/page-%05d.1.gz", 1000+i), 0), "unlink")
						}
					}
					stat()
					return sizes
				}
				e := newEnvUnder(t, fs.root, fs.typ, "", buildMan1(t, count))
				saved := backgroundShadowNames
				backgroundShadowNames = math.MaxInt
				want := func() []int64 {
					defer func() { backgroundShadowNames = saved }()
					return steps(e, false)
				}()
				got := steps(newEnvUnder(t, fs.root, fs.typ, e.dir, nil), true)
				assert.Equal(t, want, got)
				var host unix.Stat_t
				require.NoError(t, unix.Stat(filepath.Join(e.dir, "man1"), &host))
				assert.Greater(t, got[len(got)-1], host.Size, "the names added show")
			})
		}
	}
}

// TestDirSizeBackgroundBuildFails: a background build that fails marks
// the shadow broken: the directory shows the size from before.
func TestDirSizeBackgroundBuildFails(t *testing.T) {
	e := newEnvUnder(t, "/var/tmp", unix.EXT4_SUPER_MAGIC, "", buildMan1(t, 3000))
	_, release := holdBuilds(t, unix.ENOSPC)
	release()
	for i := range 1500 {
		e.create(fmt.Sprintf("man1/new-page-with-a-much-longer-name-to-make-the-directory-grow-%04d.1.gz", i), "", 0o644)
	}
	var host unix.Stat_t
	require.NoError(t, unix.Stat(filepath.Join(e.dir, "man1"), &host))
	st, err := e.v.Stat(e.c, e.c.Cwd, "man1", 0)
	require.NoError(t, err)
	assert.Equal(t, host.Size, st.Size, "the host directory's own size")
	assert.True(t, e.shadowOf("man1").broken)

	// Without the failure the names added show.
	testHookShadowBuild = nil
	ok := newEnvUnder(t, "/var/tmp", unix.EXT4_SUPER_MAGIC, e.dir, nil)
	for i := range 1500 {
		ok.create(fmt.Sprintf("man1/new-page-with-a-much-longer-name-to-make-the-directory-grow-%04d.1.gz", i), "", 0o644)
	}
	st, err = ok.v.Stat(ok.c, ok.c.Cwd, "man1", 0)
	require.NoError(t, err)
	assert.Greater(t, st.Size, host.Size)
}

// TestDropDirShadowsWithBuildInFlight: the end of the transaction cancels
// a build in flight; its directory is gone when the wait returns, and its
// descriptors closed.
func TestDropDirShadowsWithBuildInFlight(t *testing.T) {
	e := newEnvUnder(t, "/var/tmp", unix.EXT4_SUPER_MAGIC, "", buildMan1(t, 3000))
	started, release := holdBuilds(t, nil)
	e.create("man1/new.1.gz", "", 0o644)
	<-started
	fdsHeld := openFdCount(t) // the build holds a descriptor on the area
	b := e.shadowOf("man1").build
	require.NotNil(t, b)
	wait := e.v.DropDirShadows()
	assert.True(t, b.cancel.Load())
	release()
	wait()
	_, err := os.Lstat(b.area.pathOf(b.files.dir))
	assert.ErrorIs(t, err, os.ErrNotExist, "its directory removed")
	assert.ErrorIs(t, b.err, errBuildCanceled)
	assert.Less(t, len(b.files.names), 3000, "stopped before its end")
	assert.Equal(t, fdsHeld-1, openFdCount(t), "no descriptor left open")
	st, err := e.v.Stat(e.c, e.c.Cwd, "man1", 0)
	require.NoError(t, err)
	assert.Positive(t, st.Size)
}

// TestCloseWithBuildInFlight: closing the view waits for a build in
// flight, so the staging area's removal after it removes its directory.
func TestCloseWithBuildInFlight(t *testing.T) {
	e := newEnvUnder(t, "/var/tmp", unix.EXT4_SUPER_MAGIC, "", buildMan1(t, 3000))
	started, release := holdBuilds(t, nil)
	e.create("man1/new.1.gz", "", 0o644)
	<-started
	b := e.shadowOf("man1").build
	require.NotNil(t, b)
	go release()
	e.v.Close()
	select {
	case <-b.done:
	default:
		t.Fatal("Close returned with the build in flight")
	}
	assert.True(t, errors.Is(b.err, errBuildCanceled) || b.err == nil)
}

// tmpfsDir mounts a tmpfs on a temporary directory (not /dev/shm, which
// the view passes through), unmounted at the test's end.
func tmpfsDir(t *testing.T) string {
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}

// openFdCount is the number of this process's open descriptors.
func openFdCount(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}
