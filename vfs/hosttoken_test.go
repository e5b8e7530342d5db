package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/proc"
)

// hostEnv is the host view over a temporary directory, with a root caller
// whose cwd is that directory.
func hostEnv(t *testing.T) (*Host, *Caller, string) {
	t.Helper()
	dir := t.TempDir()
	h, err := NewHost()
	require.NoError(t, err)
	cwd, err := h.OpenDir(dir)
	require.NoError(t, err)
	root, err := h.OpenDir("/")
	require.NoError(t, err)
	t.Cleanup(func() { cwd.Release(); root.Release() })
	c := &Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: cwd, Root: root, Umask: 0o022}
	return h, c, dir
}

// TestHostOpenPathSymlink: O_PATH|O_NOFOLLOW of a symlink gives a
// descriptor (not ELOOP) through which the host view acts on the symlink
// itself, as glibc's fchmodat(AT_SYMLINK_NOFOLLOW) needs.
func TestHostOpenPathSymlink(t *testing.T) {
	h, c, dir := hostEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "target"), []byte("x\n"), 0o644))
	require.NoError(t, os.Symlink("target", filepath.Join(dir, "link")))

	fd, err := h.Open(c, c.Cwd, "link", OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW})
	require.NoError(t, err)
	at, err := h.HandleOf(c, fd) // as the caller's descriptor comes back
	require.NoError(t, err)
	defer at.Release()

	st, err := h.Stat(c, at, "", unix.AT_EMPTY_PATH)
	require.NoError(t, err)
	assert.Equal(t, uint32(unix.S_IFLNK), st.Mode&unix.S_IFMT, "fstatat(fd, \"\", AT_EMPTY_PATH) is the symlink's")
	target, err := h.Readlink(c, at, "")
	require.NoError(t, err)
	assert.Equal(t, "target", target)
	require.NoError(t, h.Chown(c, at, "", 0, 0, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW))

	// Following the symlink still gives a readable descriptor on the file.
	fd, err = h.Open(c, c.Cwd, "link", OpenHow{Flags: unix.O_PATH})
	require.NoError(t, err)
	defer unix.Close(fd)
	buf := make([]byte, 8)
	n, err := unix.Read(fd, buf)
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(buf[:n]))
}

// TestHostOpenPathUnreadable: an unprivileged caller gets an O_PATH
// descriptor on a directory it may search but not read, and can open
// files relative to it, as on Linux.
func TestHostOpenPathUnreadable(t *testing.T) {
	h, c, dir := hostEnv(t)
	require.NoError(t, os.Chmod(dir, 0o755))
	sub := filepath.Join(dir, "searchonly")
	require.NoError(t, os.Mkdir(sub, 0o711))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "f"), []byte("f\n"), 0o644))
	cr := &proc.Cred{UID: 1000, EUID: 1000, SUID: 1000, FSUID: 1000, GID: 1000, EGID: 1000, SGID: 1000, FSGID: 1000}
	user := &Caller{Tid: c.Tid, Tgid: c.Tgid, Cred: cr, Cwd: c.Cwd, Root: c.Root, Umask: 0o022}

	fd, err := h.Open(user, user.Cwd, "searchonly", OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY})
	require.NoError(t, err)
	at, err := h.HandleOf(user, fd)
	require.NoError(t, err)
	defer at.Release()
	ffd, err := h.Open(user, at, "f", OpenHow{Flags: unix.O_RDONLY})
	require.NoError(t, err)
	unix.Close(ffd)
}

// TestHostTokensSwept: a token whose caller descriptor is closed is
// dropped once enough tokens were made, and its object descriptor closed.
func TestHostTokensSwept(t *testing.T) {
	h, c, dir := hostEnv(t)
	require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "link")))
	for i := 0; i < 3*minTokenSweep; i++ {
		fd, err := h.Open(c, c.Cwd, "link", OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW})
		require.NoError(t, err)
		unix.Close(fd)
	}
	h.tokens.mu.Lock()
	n := len(h.tokens.byPipe)
	h.tokens.mu.Unlock()
	assert.Less(t, n, 2*minTokenSweep, "closed tokens are dropped")
}
