package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestDirPath: a cwd or root handle's absolute path, in the host's view and
// in a transaction's (a directory it made, one it removed), and back: what
// moves a thread's context between views.
func TestDirPath(t *testing.T) {
	e := newEnv(t, func(dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "old"), 0o755)) })

	hostDir, err := e.host.OpenDir(filepath.Join(e.dir, "old"))
	require.NoError(t, err)
	defer hostDir.Release()
	p, err := e.host.DirPath(hostDir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(e.dir, "old"), p)
	hostRoot, err := e.host.OpenDir("/")
	require.NoError(t, err)
	defer hostRoot.Release()
	p, err = e.host.DirPath(hostRoot)
	require.NoError(t, err)
	assert.Equal(t, "/", p)

	txOld, err := e.v.OpenDir(filepath.Join(e.dir, "old"))
	require.NoError(t, err)
	defer txOld.Release()
	p, err = e.v.DirPath(txOld)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(e.dir, "old"), p, "a host directory, in the view")

	e.must(e.v.Mkdir(e.c, e.c.Cwd, "new", 0o755), "mkdir new")
	txNew, err := e.v.OpenDir(filepath.Join(e.dir, "new"))
	require.NoError(t, err)
	defer txNew.Release()
	p, err = e.v.DirPath(txNew)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(e.dir, "new"), p, "a directory the transaction made")
	_, err = e.host.OpenDir(p)
	assert.Error(t, err, "not on the host")

	e.must(e.v.Unlink(e.c, e.c.Cwd, "old", unix.AT_REMOVEDIR), "rmdir old")
	_, err = e.v.DirPath(txOld)
	assert.ErrorIs(t, err, unix.ENOENT, "removed in the transaction")
	p, err = e.v.DirPath(e.c.Root)
	require.NoError(t, err)
	assert.Equal(t, "/", p)
}
