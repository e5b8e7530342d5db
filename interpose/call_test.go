package interpose

import (
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func sameFile(t *testing.T, a, b int) {
	t.Helper()
	var sa, sb unix.Stat_t
	require.NoError(t, unix.Fstat(a, &sa))
	require.NoError(t, unix.Fstat(b, &sb))
	assert.Equal(t, [2]uint64{sa.Dev, sa.Ino}, [2]uint64{sb.Dev, sb.Ino})
}

// TestPidfdCache duplicates descriptors of a child process through the
// cache, including after the child has died (ESRCH, the entry reopened and
// failing again) and from a second process whose id shares the slot.
func TestPidfdCache(t *testing.T) {
	var p pidfdCache
	defer p.close()

	f, err := os.Open("/")
	require.NoError(t, err)
	defer f.Close()
	self := os.Getpid()
	for i := 0; i < 3; i++ {
		fd, err := p.getFD(self, int(f.Fd()))
		require.NoError(t, err)
		sameFile(t, fd, int(f.Fd()))
		unix.Close(fd)
	}
	_, err = p.getFD(self, 1000)
	require.ErrorIs(t, err, unix.EBADF)

	child := exec.Command("sleep", "60")
	child.ExtraFiles = []*os.File{f} // the child's descriptor 3
	require.NoError(t, child.Start())
	pid := child.Process.Pid
	fd, err := p.getFD(pid, 3)
	require.NoError(t, err)
	sameFile(t, fd, int(f.Fd()))
	unix.Close(fd)
	require.NoError(t, child.Process.Kill())
	child.Wait()
	_, err = p.getFD(pid, 3)
	require.ErrorIs(t, err, unix.ESRCH)

	// A slot holds one thread at a time: alternating ids that collide
	// reopen their pidfds and stay correct.
	other := self + pidfdSlots
	if fd, err := p.getFD(other, 0); err == nil {
		unix.Close(fd) // some process has that id
	} else {
		require.ErrorIs(t, err, unix.ESRCH)
	}
	fd, err = p.getFD(self, int(f.Fd()))
	require.NoError(t, err)
	sameFile(t, fd, int(f.Fd()))
	unix.Close(fd)
}

// TestCloseOnExec reads the close-on-exec flag of a thread's descriptor, as
// the kernel's exec sees it.
func TestCloseOnExec(t *testing.T) {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	tid := unix.Gettid()
	got, err := CloseOnExec(tid, fd)
	require.NoError(t, err)
	assert.True(t, got)
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0)
	require.NoError(t, err)
	got, err = CloseOnExec(tid, fd)
	require.NoError(t, err)
	assert.False(t, got)
	_, err = CloseOnExec(tid, 100000)
	assert.ErrorIs(t, err, unix.EBADF)
}

// TestSettleRepliesWaitsForTheReply: a settling call returns once the
// descriptor replies in flight are done, however long the replying
// worker takes to run (here 30 ms, beyond the 9 ms seen on a busy VM),
// and does not wait for ever for a reply that never ends.
func TestSettleRepliesWaitsForTheReply(t *testing.T) {
	l := &listener{}
	c := &Call{listener: l}
	l.replying.Store(1)
	// cleared is set just before the reply ends: SettleReplies, which
	// returns once it has ended, must find it set. (A channel closed just
	// after would race its return.)
	var cleared atomic.Bool
	go func() {
		time.Sleep(30 * time.Millisecond)
		cleared.Store(true)
		l.replying.Store(0)
	}()
	c.SettleReplies()
	if !cleared.Load() {
		t.Fatal("SettleReplies returned while a reply was in flight")
	}

	l.replying.Store(1)
	start := time.Now()
	c.SettleReplies()
	assert.GreaterOrEqual(t, time.Since(start), settleLimit, "a stuck reply is waited for up to settleLimit")
}
