package crashfs_test

import (
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/crashfs"
	"txexec/internal/testenv"
)

// mount mounts a crashfs on a new directory, unmounted at the end.
func mount(t *testing.T) *crashfs.Mount {
	t.Helper()
	if why := crashfs.Available(); why != "" {
		testenv.SkipOrFail(t, "%s", why)
	}
	m, err := crashfs.New(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Close()) })
	return m
}

// describe lists the tree under root: path, mode, links, contents.
func describe(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := rel + " " + fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
			if n := fi.Sys().(*syscall.Stat_t).Nlink; n != 1 {
				line += " links=" + string(rune('0'+n))
			}
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		}
		out = append(out, line)
		return nil
	}))
	sort.Strings(out)
	return out
}

func write(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

// fsync fsyncs p (datasync: fdatasync).
func fsync(t *testing.T, p string, datasync bool) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	if datasync {
		require.NoError(t, unix.Fdatasync(fd))
	} else {
		require.NoError(t, unix.Fsync(fd))
	}
}

// TestPowerCut: what each sequence of calls leaves after a power cut,
// from a durable tree of a directory d holding a file f ("old", 0644).
func TestPowerCut(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, root string)
		want []string
	}{
		{"nothing synced", func(t *testing.T, r string) {
			write(t, r+"/d/new", "new")
			write(t, r+"/d/f", "changed")
			require.NoError(t, os.Mkdir(r+"/e", 0o755))
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old"}},
		{"a new file fsynced, not its directory: no name", func(t *testing.T, r string) {
			write(t, r+"/d/new", "new")
			fsync(t, r+"/d/new", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old"}},
		{"the directory fsynced, not the new file: empty", func(t *testing.T, r string) {
			write(t, r+"/d/new", "new")
			fsync(t, r+"/d", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old", "d/new -rw-r--r-- "}},
		{"both fsynced", func(t *testing.T, r string) {
			write(t, r+"/d/new", "new")
			fsync(t, r+"/d/new", false)
			fsync(t, r+"/d", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old", "d/new -rw-r--r-- new"}},
		{"syncfs makes nothing durable", func(t *testing.T, r string) {
			write(t, r+"/d/new", "new")
			fd, err := unix.Open(r+"/d", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			require.NoError(t, err)
			defer unix.Close(fd)
			require.NoError(t, unix.Syncfs(fd))
			unix.Sync()
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old"}},
		{"a renamed unsynced copy: the name, no data", func(t *testing.T, r string) {
			write(t, r+"/d/tmp", "new")
			require.NoError(t, os.Rename(r+"/d/tmp", r+"/d/f"))
			fsync(t, r+"/d", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- "}},
		{"chmod, fdatasync: data, not the mode", func(t *testing.T, r string) {
			write(t, r+"/d/f", "changed")
			require.NoError(t, os.Chmod(r+"/d/f", 0o600))
			fsync(t, r+"/d/f", true)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- changed"}},
		{"chmod, fsync: the mode", func(t *testing.T, r string) {
			require.NoError(t, os.Chmod(r+"/d/f", 0o600))
			require.NoError(t, os.Chmod(r+"/d", 0o700))
			fsync(t, r+"/d/f", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw------- old"}},
		{"truncate unsynced", func(t *testing.T, r string) {
			require.NoError(t, os.Truncate(r+"/d/f", 1))
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old"}},
		{"unlink unsynced", func(t *testing.T, r string) {
			require.NoError(t, os.Remove(r+"/d/f"))
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old"}},
		{"unlink, directory fsynced", func(t *testing.T, r string) {
			require.NoError(t, os.Remove(r+"/d/f"))
			fsync(t, r+"/d", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x"}},
		{"rename across directories is atomic: the target fsynced", func(t *testing.T, r string) {
			require.NoError(t, os.Mkdir(r+"/e", 0o755))
			fsync(t, r, false)
			require.NoError(t, os.Rename(r+"/d/f", r+"/e/g"))
			fsync(t, r+"/e", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "e drwxr-xr-x", "e/g -rw-r--r-- old"}},
		{"rename across directories is atomic: the source fsynced", func(t *testing.T, r string) {
			require.NoError(t, os.Mkdir(r+"/e", 0o755))
			fsync(t, r, false)
			require.NoError(t, os.Rename(r+"/d/f", r+"/e/g"))
			fsync(t, r+"/d", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "e drwxr-xr-x", "e/g -rw-r--r-- old"}},
		{"a rename carries the earlier changes of its directories", func(t *testing.T, r string) {
			write(t, r+"/d/x", "x")
			fsync(t, r+"/d/x", false)
			require.NoError(t, os.Rename(r+"/d/x", r+"/y"))
			fsync(t, r, false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old", "y -rw-r--r-- x"}},
		{"a new directory's entries need its own fsync", func(t *testing.T, r string) {
			require.NoError(t, os.Mkdir(r+"/e", 0o755))
			write(t, r+"/e/g", "g")
			fsync(t, r+"/e/g", false)
			fsync(t, r, false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old", "e drwxr-xr-x"}},
		{"hard link and symlink", func(t *testing.T, r string) {
			require.NoError(t, os.Link(r+"/d/f", r+"/d/l"))
			require.NoError(t, os.Symlink("f", r+"/d/s"))
			fsync(t, r+"/d", false)
		}, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old links=2", "d/l -rw-r--r-- old links=2", "d/s Lrwxrwxrwx -> f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mount(t)
			require.NoError(t, os.Mkdir(m.Dir+"/d", 0o755))
			write(t, m.Dir+"/d/f", "old")
			m.Sync()
			tt.do(t, m.Dir)
			require.NoError(t, m.PowerCut())
			assert.Equal(t, tt.want, describe(t, m.Dir))
		})
	}
}

// TestXattrsNeedFsync: an extended attribute survives a cut once its file
// is fsynced.
func TestXattrsNeedFsync(t *testing.T) {
	m := mount(t)
	p := m.Dir + "/f"
	write(t, p, "x")
	m.Sync()
	require.NoError(t, unix.Setxattr(p, "user.a", []byte("1"), 0))
	require.NoError(t, m.PowerCut())
	_, err := unix.Getxattr(p, "user.a", nil)
	require.ErrorIs(t, err, unix.ENODATA)

	require.NoError(t, unix.Setxattr(p, "user.a", []byte("1"), 0))
	fsync(t, p, false)
	require.NoError(t, m.PowerCut())
	buf := make([]byte, 8)
	n, err := unix.Getxattr(p, "user.a", buf)
	require.NoError(t, err)
	assert.Equal(t, "1", string(buf[:n]))
}

// TestCutAtBoundary: the first k boundary operations are performed, the
// next fails with EIO, onCut runs, and so does nothing after it.
func TestCutAtBoundary(t *testing.T) {
	m := mount(t)
	write(t, m.Dir+"/a", "a")
	m.Sync()
	cuts := 0
	m.CutAtBoundary(2, func() { cuts++ })
	require.NoError(t, os.Rename(m.Dir+"/a", m.Dir+"/b")) // 1
	fsync(t, m.Dir, false)                                // 2
	err := os.Rename(m.Dir+"/b", m.Dir+"/c")              // the cut
	require.ErrorIs(t, err, syscall.EIO)
	_, err = os.Stat(m.Dir + "/b")
	require.ErrorIs(t, err, syscall.EIO, "frozen after the cut")
	ops, cut := m.Boundaries()
	assert.Equal(t, []string{"rename", "fsyncdir"}, ops)
	assert.True(t, cut)
	assert.Equal(t, 1, cuts)
	require.NoError(t, m.PowerCut())
	assert.Equal(t, []string{". drwxr-xr-x", "b -rw-r--r-- a"}, describe(t, m.Dir))
}

// TestFailFsync: the Nth fsync, or those of a path, fail with EIO and
// make nothing durable.
func TestFailFsync(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault crashfs.FsyncFault
	}{
		{"nth", crashfs.FsyncFault{Nth: 2}},
		{"path", crashfs.FsyncFault{Path: "d/*"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := mount(t)
			require.NoError(t, os.Mkdir(m.Dir+"/d", 0o755))
			write(t, m.Dir+"/d/f", "old")
			write(t, m.Dir+"/g", "old")
			m.Sync()
			m.FailFsync(tt.fault)
			write(t, m.Dir+"/g", "new")
			fsync(t, m.Dir+"/g", false)
			write(t, m.Dir+"/d/f", "new")
			fd, err := unix.Open(m.Dir+"/d/f", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			require.NoError(t, err)
			require.ErrorIs(t, unix.Fsync(fd), unix.EIO)
			unix.Close(fd)
			n, failed := m.Fsyncs()
			assert.Equal(t, 2, n)
			assert.Equal(t, 1, failed)
			require.NoError(t, m.PowerCut())
			assert.Equal(t, []string{". drwxr-xr-x", "d drwxr-xr-x", "d/f -rw-r--r-- old", "g -rw-r--r-- new"}, describe(t, m.Dir))
		})
	}
}
