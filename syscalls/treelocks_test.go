package syscalls

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/hostlock"
)

// treeHolderProc is a process of the "tree" that keeps a descriptor on an
// open file description of the original until its stdin is closed.
type treeHolderProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	desc int // the supervisor's duplicate of the description
}

func startTreeHolder(t *testing.T, path string) *treeHolderProc {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	cmd := exec.Command("cat")
	cmd.ExtraFiles = []*os.File{f}
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	desc, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	require.NoError(t, err)
	p := &treeHolderProc{cmd: cmd, in: in, desc: desc}
	t.Cleanup(func() { p.exit(t); unix.Close(desc) })
	return p
}

// exit ends the process, closing its descriptor: the description's last
// close in the tree.
func (p *treeHolderProc) exit(t *testing.T) {
	if p.in != nil {
		p.in.Close()
		assert.NoError(t, p.cmd.Wait())
		p.in = nil
	}
}

// TestTreeLocks: locks held for descriptions of the tree exclude each
// other on the staged copy; an unlock through a description releases its
// lock, and so does its last close in the tree, found at the next
// conflict; Release drops everything.
func TestTreeLocks(t *testing.T) {
	dir := t.TempDir()
	orig, staged := filepath.Join(dir, "orig"), filepath.Join(dir, "copy")
	for _, p := range []string{orig, staged} {
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	a, b := startTreeHolder(t, orig), startTreeHolder(t, orig)
	tree := func() []int {
		var pids []int
		for _, p := range []*treeHolderProc{a, b} {
			if p.in != nil {
				pids = append(pids, p.cmd.Process.Pid)
			}
		}
		return pids
	}
	tl := NewTreeLocks()
	key := hostlock.Key{Dev: 1, Ino: 2}
	openCopy := func() (int, error) { return unix.Open(staged, unix.O_RDONLY|unix.O_CLOEXEC, 0) }
	w := treeWait{t: tl, pids: tree}
	flock := func(p *treeHolderProc, how int) error {
		return tl.lock(key, p.desc, openCopy, w, func(fd int) error { return unix.Flock(fd, how|unix.LOCK_NB) })
	}

	require.NoError(t, flock(a, unix.LOCK_EX))
	assert.Equal(t, unix.EWOULDBLOCK, flock(b, unix.LOCK_SH), "a holds it")
	outside, err := unix.Open(staged, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(outside)
	assert.Equal(t, unix.EWOULDBLOCK, unix.Flock(outside, unix.LOCK_SH|unix.LOCK_NB), "the tree's other locks on the copy meet it")
	held, err := tl.holds(key, a.desc)
	require.NoError(t, err)
	assert.True(t, held)

	found, err := tl.unlock(nil, a.desc, func(fd int) error { return unix.Flock(fd, unix.LOCK_UN) })
	require.NoError(t, err)
	assert.True(t, found)
	require.NoError(t, flock(b, unix.LOCK_EX), "once a unlocked")
	assert.Equal(t, unix.EWOULDBLOCK, flock(a, unix.LOCK_EX), "b holds it")

	b.exit(t)
	require.NoError(t, flock(a, unix.LOCK_EX), "b's description was closed in the tree")
	held, err = tl.holds(key, b.desc)
	require.NoError(t, err)
	assert.False(t, held, "b's holder is dropped")

	tl.Release()
	assert.False(t, tl.any())
	assert.NoError(t, unix.Flock(outside, unix.LOCK_EX|unix.LOCK_NB), "nothing is held once the transaction ended")
}
