package interpose

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestDescriptionShared: a description is shared when another descriptor
// refers to it, not when another description is open on the same file;
// SameDescription tells a descriptor's own description from another's.
func TestDescriptionShared(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	other, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(other)
	self := []int{os.Getpid()}

	shared, err := DescriptionShared(unix.Gettid(), fd, self)
	require.NoError(t, err)
	assert.False(t, shared, "another open of the file is another description")
	same, err := SameDescription(os.Getpid(), fd, other)
	require.NoError(t, err)
	assert.False(t, same)

	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	require.NoError(t, err)
	shared, err = DescriptionShared(unix.Gettid(), fd, self)
	require.NoError(t, err)
	assert.True(t, shared, "a dup shares it")
	same, err = SameDescription(os.Getpid(), fd, dup)
	require.NoError(t, err)
	assert.True(t, same)

	unix.Close(dup)
	shared, err = DescriptionShared(unix.Gettid(), fd, self)
	require.NoError(t, err)
	assert.False(t, shared, "once the dup is closed")
}

// TestDescriptionHeld: a description is held while a descriptor of one of
// the processes refers to it, not by another description of the file, and
// no longer once the process that had it has exited.
func TestDescriptionHeld(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	other, err := os.Open(p)
	require.NoError(t, err)
	defer other.Close()
	cmd := exec.Command("cat")
	cmd.ExtraFiles = []*os.File{f}
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	own, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(own)
	require.NoError(t, f.Close())
	pids := []int{cmd.Process.Pid} // the tree: not the supervisor

	held, err := DescriptionHeld(own, pids)
	require.NoError(t, err)
	assert.True(t, held, "the child has it")
	held, err = DescriptionHeld(int(other.Fd()), pids)
	require.NoError(t, err)
	assert.False(t, held, "another description of the file")
	same, err := SameOwnDescription(own, int(other.Fd()))
	require.NoError(t, err)
	assert.False(t, same)

	require.NoError(t, in.Close())
	require.NoError(t, cmd.Wait())
	held, err = DescriptionHeld(own, pids)
	require.NoError(t, err)
	assert.False(t, held, "once the child has exited")
}
