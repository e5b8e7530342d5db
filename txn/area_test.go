package txn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/proc"
	"txexec/store"
	"txexec/vfs"
)

// TestCommitOnOtherMount: a transaction that changes a file on a tmpfs
// (another mount than the state directory's) stages it there, commits
// (the write-through renames within the tmpfs) and leaves no staging area;
// an aborted one leaves the host and the tmpfs as they were.
func TestCommitOnOtherMount(t *testing.T) {
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "mode=0755"); err == unix.EPERM {
		t.Skipf("mounting a tmpfs needs CAP_SYS_ADMIN: %v", err)
	} else {
		require.NoError(t, err)
	}
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(mnt, unix.MNT_DETACH)) })
	writeFile(t, filepath.Join(mnt, "f"), "old\n")
	s, err := store.Open(t.TempDir(), store.Options{Durable: true})
	require.NoError(t, err)
	defer s.Close()
	host, err := vfs.NewHost()
	require.NoError(t, err)
	m := &Manager{Store: s, Host: host, Durable: true}

	for _, commit := range []bool{false, true} {
		tx, err := m.Begin([]string{"write"}, "/")
		require.NoError(t, err)
		cwd, err := tx.View.OpenDir(mnt)
		require.NoError(t, err)
		root, err := tx.View.OpenDir("/")
		require.NoError(t, err)
		c := &vfs.Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: cwd, Root: root}
		fd, err := tx.View.Open(c, cwd, "f", vfs.OpenHow{Flags: unix.O_WRONLY | unix.O_TRUNC})
		require.NoError(t, err)
		_, err = unix.Write(fd, []byte("new\n"))
		require.NoError(t, err)
		unix.Close(fd)
		areas, err := s.StagingAreas(tx.ID)
		require.NoError(t, err)
		require.Len(t, areas, 2, "the state directory's and the tmpfs's")
		assert.Equal(t, mnt, filepath.Dir(areas[1]))
		assert.True(t, strings.HasPrefix(filepath.Base(areas[1]), store.AreaPrefix))

		if commit {
			require.NoError(t, tx.Commit())
			assert.Equal(t, "new\n", readFile(t, filepath.Join(mnt, "f")))
		} else {
			require.NoError(t, tx.Abort("test"))
			assert.Equal(t, "old\n", readFile(t, filepath.Join(mnt, "f")))
		}
		left, err := os.ReadDir(mnt)
		require.NoError(t, err)
		require.Len(t, left, 1, "commit=%v: only f, no staging area", commit)
		assert.NoDirExists(t, areas[0])
		areas, err = s.StagingAreas(tx.ID)
		require.NoError(t, err)
		assert.Len(t, areas, 1, "the area is forgotten")
	}
}
