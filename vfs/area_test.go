package vfs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/proc"
	"txexec/store"
	"txexec/vfs"
)

// TestStagingAreaPerMount: a transaction that changes files on two other
// mounts besides the staging directory's makes one area on each, at the
// mount's root, at the first change there and never again; a listing of
// the mount root, in the view and when validating it, leaves the area
// out, so a transaction that listed a mount root and then created a file
// there does not conflict with its own area.
func TestStagingAreaPerMount(t *testing.T) {
	local := t.TempDir()
	tmpfs, bind := t.TempDir(), t.TempDir()
	mountTree(t, tmpfs, tmpfsRoot)
	mountTree(t, bind, bindRoot)
	for _, d := range []string{local, tmpfs, bind} {
		require.NoError(t, os.WriteFile(filepath.Join(d, "old"), []byte("old\n"), 0o644))
	}
	host, err := vfs.NewHost()
	require.NoError(t, err)
	staging := t.TempDir()
	var made []string
	v, err := vfs.NewTx(host, staging, vfs.TxOptions{NewArea: func(mountPoint string) (string, error) {
		p := filepath.Join(mountPoint, fmt.Sprintf("%stest-%d", store.AreaPrefix, len(made)))
		made = append(made, p)
		return p, os.Mkdir(p, 0o700)
	}})
	require.NoError(t, err)
	t.Cleanup(v.Close)
	c := callerIn(t, v, "/")

	for _, d := range []string{local, tmpfs, bind} {
		names := listNames(t, v, c, d)
		assert.Equal(t, []string{"old"}, names, "%s before", d)
		for _, name := range []string{"a", "b"} {
			fd, err := v.Open(c, c.Cwd, filepath.Join(d, name), vfs.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o644})
			require.NoError(t, err)
			unix.Close(fd)
		}
		fd, err := v.Open(c, c.Cwd, filepath.Join(d, "old"), vfs.OpenHow{Flags: unix.O_WRONLY | unix.O_APPEND})
		require.NoError(t, err, "copy-up")
		unix.Close(fd)
		assert.Equal(t, []string{"a", "b", "old"}, listNames(t, v, c, d), "%s after", d)
		st, err := v.Stat(c, c.Cwd, d, 0)
		require.NoError(t, err)
		assert.Equal(t, uint64(2), st.Nlink, "%s: the area is no subdirectory in the view", d)
	}
	assert.Equal(t, []string{
		filepath.Join(tmpfs, store.AreaPrefix+"test-0"),
		filepath.Join(bind, store.AreaPrefix+"test-1"),
	}, made, "one area per other mount, at its root")
	require.NoError(t, v.Validate(nil), "listing a mount root, then staging on its mount, is no conflict")
	require.NoError(t, v.Doomed())
	for _, g := range v.WriteSet() {
		assert.NotContains(t, g.Path, store.AreaPrefix, "staged objects are in no write set")
		assert.NotContains(t, g.Path, staging)
	}
}

// TestStagingAreaRefused: when no staging area can be made on a mount,
// the first change there fails with EIO and dooms the transaction with a
// *vfs.StagingError naming the path and why; the view never asks again
// and never stages elsewhere, and other mounts are unaffected.
func TestStagingAreaRefused(t *testing.T) {
	local, mnt := t.TempDir(), t.TempDir()
	mountTree(t, mnt, tmpfsRoot)
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "old"), []byte("old\n"), 0o644))
	host, err := vfs.NewHost()
	require.NoError(t, err)
	calls := 0
	v, err := vfs.NewTx(host, t.TempDir(), vfs.TxOptions{NewArea: func(mountPoint string) (string, error) {
		calls++
		return "", &fs.PathError{Op: "mkdir", Path: mountPoint + "/x", Err: unix.EACCES}
	}})
	require.NoError(t, err)
	t.Cleanup(v.Close)
	c := callerIn(t, v, "/")

	_, err = v.Open(c, c.Cwd, filepath.Join(mnt, "new"), vfs.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o644})
	require.ErrorIs(t, err, unix.EIO)
	var se *vfs.StagingError
	require.ErrorAs(t, v.Doomed(), &se)
	assert.Equal(t, filepath.Join(mnt, "new"), se.Path)
	assert.ErrorIs(t, se, fs.ErrPermission)
	assert.Contains(t, se.Error(), "cannot stage the change to "+filepath.Join(mnt, "new")+": mkdir "+mnt+"/x: permission denied")
	assert.Contains(t, se.Error(), "run txexec as a user who may create it there")

	require.ErrorIs(t, v.Mkdir(c, c.Cwd, filepath.Join(mnt, "dir"), 0o755), unix.EIO)
	_, err = v.Open(c, c.Cwd, filepath.Join(mnt, "old"), vfs.OpenHow{Flags: unix.O_WRONLY | unix.O_APPEND})
	require.ErrorIs(t, err, unix.EIO, "a copy-up needs the area too")
	assert.Equal(t, 1, calls, "asked once per mount")
	var again *vfs.StagingError
	require.ErrorAs(t, v.Doomed(), &again)
	assert.Same(t, se, again, "the first reason stays")

	fd, err := v.Open(c, c.Cwd, filepath.Join(local, "new"), vfs.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o644})
	require.NoError(t, err, "the staging directory's own mount needs no area")
	unix.Close(fd)
	fd, err = v.Open(c, c.Cwd, filepath.Join(mnt, "old"), vfs.OpenHow{Flags: unix.O_RDONLY})
	require.NoError(t, err, "reads need no area")
	unix.Close(fd)
	for _, op := range v.Journal() {
		assert.NotContains(t, op.Path, mnt, "nothing on the refused mount is journaled")
	}
}

// TestTmpfileLinkAcrossMounts: an O_TMPFILE is on the mount of the
// directory it was made in; linkat gives it a name on another mount only
// as Linux does, not at all (EXDEV).
func TestTmpfileLinkAcrossMounts(t *testing.T) {
	local, mnt := t.TempDir(), t.TempDir()
	mountTree(t, mnt, tmpfsRoot)
	w := newViewOn(t, sameMount)
	fd, err := w.v.Open(w.c, w.c.Cwd, mnt, vfs.OpenHow{Flags: unix.O_TMPFILE | unix.O_WRONLY, Mode: 0o600})
	require.NoError(t, err)
	defer unix.Close(fd)
	dup, err := unix.Dup(fd)
	require.NoError(t, err)
	h, err := w.v.HandleOf(w.c, dup)
	require.NoError(t, err)
	defer h.Release()
	require.ErrorIs(t, w.v.Link(w.c, h, "", w.c.Cwd, filepath.Join(local, "x"), unix.AT_EMPTY_PATH), unix.EXDEV)
	require.NoError(t, w.v.Link(w.c, h, "", w.c.Cwd, filepath.Join(mnt, "x"), unix.AT_EMPTY_PATH))
	require.Len(t, w.areas, 1)
	ops := w.v.Journal()
	require.Len(t, ops, 1)
	assert.Equal(t, w.areas[0], filepath.Dir(ops[0].Src), "staged in the area of its mount")
}

// callerIn is a root caller whose cwd is dir.
func callerIn(t *testing.T, v *vfs.Tx, dir string) *vfs.Caller {
	t.Helper()
	cwd, err := v.OpenDir(dir)
	require.NoError(t, err)
	root, err := v.OpenDir("/")
	require.NoError(t, err)
	return &vfs.Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: cwd, Root: root, Umask: 0o022}
}

// listNames lists directory dir in the view, sorted.
func listNames(t *testing.T, v *vfs.Tx, c *vfs.Caller, dir string) []string {
	t.Helper()
	fd, err := v.Open(c, c.Cwd, dir, vfs.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY})
	require.NoError(t, err)
	h, err := v.HandleOf(c, fd)
	require.NoError(t, err)
	defer h.Release()
	ents, merged, err := v.Listing(c, h)
	require.NoError(t, err)
	require.True(t, merged, "the view serves the listing of %s", dir)
	var names []string
	for _, e := range ents {
		if e.Name != "." && e.Name != ".." {
			names = append(names, e.Name)
		}
	}
	sort.Strings(names)
	return names
}
