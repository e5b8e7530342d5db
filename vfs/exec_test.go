package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestExecutableWithoutPath: a program reached through a descriptor of an
// object no path names (a memfd, an unlinked host file) has no host path the
// kernel could execute; a file that a path still names keeps it.
func TestExecutableWithoutPath(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "prog"), []byte("\x7fELF"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "gone"), []byte("\x7fELF"), 0o755))
	})
	exe := func(fd int) Exe {
		t.Helper()
		h, err := e.v.HandleOf(e.c, fd)
		require.NoError(t, err)
		defer h.Release()
		x, err := e.v.Executable(e.c, h, "", unix.AT_EMPTY_PATH)
		require.NoError(t, err)
		unix.Close(x.FD)
		var st unix.Stat_t
		require.NoError(t, unix.Fstat(fd, &st))
		assert.Equal(t, [2]uint64{st.Dev, st.Ino}, [2]uint64{x.Dev, x.Ino})
		return x
	}

	m, err := unix.MemfdCreate("prog", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	_, err = unix.Write(m, []byte("\x7fELF"))
	require.NoError(t, err)
	assert.Empty(t, exe(m).Path, "memfd")

	p, err := unix.Open(filepath.Join(e.dir, "prog"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(e.dir, "prog"), exe(p).Path, "named host file")

	g, err := unix.Open(filepath.Join(e.dir, "gone"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(e.dir, "gone")))
	assert.Empty(t, exe(g).Path, "unlinked host file")
}
