package interpose

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Call is one intercepted system call, received from the notification fd.
// It is handed to exactly one handler, which answers it with one Reply.
type Call struct {
	// ID is the kernel's notification cookie.
	ID uint64
	// Tid is the calling thread, in the supervisor's pid namespace.
	Tid int
	// Nr is the system-call number (unix.SYS_*).
	Nr   int
	Args [6]Arg
	IP   uint64

	Memory
	listener *listener
	// memRead is set by the first read of tracee memory. A call whose
	// memory was read must never be answered with CONTINUE (DESIGN §4.1):
	// another thread could rewrite the argument before the kernel re-reads
	// it.
	memRead bool
}

func newCall(l *listener, n *seccompNotif) *Call {
	c := &Call{
		ID:       n.ID,
		Tid:      int(n.Pid),
		Nr:       int(n.Data.Nr),
		IP:       n.Data.InstructionPointer,
		listener: l,
	}
	for i, a := range n.Data.Args {
		c.Args[i] = Arg(a)
	}
	c.Memory = Memory{Tid: c.Tid, read: &c.memRead}
	return c
}

// MemoryRead reports whether the handler has read tracee memory.
func (c *Call) MemoryRead() bool { return c.memRead }

// Valid checks that the notification is still pending. Handlers call it after
// copying in their arguments and before acting on them: a pid read from the
// notification may have been recycled if the caller died meanwhile.
func (c *Call) Valid() error {
	if err := notifIDValid(c.listener.fd, c.ID); err != nil {
		return unix.ESRCH
	}
	return nil
}

// GetFD duplicates the tracee's descriptor fd into the supervisor
// (pidfd_getfd). The caller owns the returned descriptor.
func (c *Call) GetFD(fd int) (int, error) {
	return GetFD(c.Tid, fd)
}

// GetFD duplicates descriptor fd of thread tid into the supervisor.
func GetFD(tid, fd int) (int, error) {
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		return -1, unix.ESRCH
	}
	defer unix.Close(pidfd)
	nfd, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if err == unix.EBADF {
			return -1, unix.EBADF
		}
		return -1, err
	}
	return nfd, nil
}

func (c *Call) String() string {
	return fmt.Sprintf("tid %d syscall %d", c.Tid, c.Nr)
}
