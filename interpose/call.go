package interpose

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
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
	// memory was read must never be answered with CONTINUE (docs/architecture.md §3):
	// another thread could rewrite the argument before the kernel re-reads
	// it.
	memRead bool
	// handoff is the receiving worker's hand-off of the CPU for a
	// descriptor reply (idleHandoff); nil for none.
	handoff *idleHandoff
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
//
// ESRCH means the caller is gone (killed, or its call interrupted): nobody
// waits for the answer. Any other failure is the supervisor's own, an
// internal error: a live caller must never be told ESRCH for it.
func (c *Call) Valid() error {
	switch err := notifIDValid(c.listener.fd, c.ID); err {
	case nil:
		return nil
	case unix.ENOENT:
		return unix.ESRCH
	default:
		return fmt.Errorf("check that the call of %d is pending: %v", c.Tid, err)
	}
}

// WillWait tells the listener that the handler is about to wait for
// another process: a FIFO's other end, a lock's holder. Unless a worker is
// receiving already, one is sent into RECV at once, so that the rest of the
// tree, and the process that ends the wait, are served meanwhile (the
// listener's watchdog would do it only at its next look).
func (c *Call) WillWait() {
	if c.listener == nil || c.listener.receivers.Load() > 0 {
		return
	}
	c.listener.addReceiver()
}

// SettleReplies waits until no reply that installs a descriptor is in
// flight, so that what the caller does next sees every descriptor the tree
// closed as closed. A reply with ADDFD and SEND returns only after the
// caller has taken the descriptor and run on, and the supervisor's
// references (its own descriptor, the kernel's for the ADDFD) are dropped
// after that: a process that closes a descriptor at once leaves the open
// file alive until the replying worker runs again, and its last-close
// effects (a FIFO end going away, a flock released) come late. Calls that
// depend on them (an open of a FIFO, flock) settle first.
//
// How long a reply stays in flight is the scheduler's business: on this
// 2-vCPU VM, a tight open/flock/close loop saw the worker wake from its
// ADDFD wait up to 9 ms after the caller had run on (the old 5 ms bound
// let about one run of case 260 in five see a stale lock). The wait is
// still bounded, by settleLimit: a reply stuck on a caller that does not
// run (stopped by SIGSTOP, say) must not stall another call for ever. It
// yields the CPU, where the replying worker may be waiting to run, and
// sleeps once the reply is not about to end.
func (c *Call) SettleReplies() {
	if c.listener == nil || c.listener.replying.Load() == 0 {
		return
	}
	start := time.Now()
	for c.listener.replying.Load() > 0 {
		waited := time.Since(start)
		switch {
		case waited >= settleLimit:
			return
		case waited < settleSpin:
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		default:
			time.Sleep(settleSleep)
		}
	}
}

// settleLimit bounds SettleReplies, beyond any scheduling delay seen;
// settleSpin is how long it yields before it sleeps settleSleep at a time.
const (
	settleLimit = 250 * time.Millisecond
	settleSpin  = time.Millisecond
	settleSleep = 100 * time.Microsecond
)

// GetFD duplicates the tracee's descriptor fd into the supervisor
// (pidfd_getfd). The caller owns the returned descriptor.
func (c *Call) GetFD(fd int) (int, error) {
	if c.listener == nil {
		return GetFD(c.Tid, fd)
	}
	return c.listener.pidfds.getFD(c.Tid, fd)
}

// pidfdCache keeps a pidfd for each of the threads that most recently
// needed one, so that duplicating a descriptor of theirs (every call that
// takes a dirfd or an fd) costs one system call, pidfd_getfd, instead of
// three. A pidfd names a task, not a number: if its thread has gone,
// pidfd_getfd fails with ESRCH and the entry is opened again for whatever
// thread now has that id (the caller checked with Valid that it is the
// one that made the call).
type pidfdCache struct {
	mu sync.Mutex
	// slots are indexed by tid modulo their number; mu is held across
	// pidfd_getfd so that no entry is closed while in use.
	// +checklocks:mu
	slots [pidfdSlots]struct {
		tid, fd int
		ok      bool
	}
}

const pidfdSlots = 64

func (p *pidfdCache) getFD(tid, fd int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.slots[uint(tid)%pidfdSlots]
	for fresh := false; ; fresh = true {
		if !s.ok || s.tid != tid || fresh {
			if s.ok {
				unix.Close(s.fd)
				s.ok = false
			}
			pidfd, err := openThread(tid)
			if err != nil {
				return -1, err
			}
			s.tid, s.fd, s.ok = tid, pidfd, true
		}
		nfd, err := getfd(s.fd, tid, fd)
		if err == unix.ESRCH && !fresh {
			continue // a thread that has gone; tid is someone else's now
		}
		return nfd, err
	}
}

// openThread opens a pidfd on thread tid. ESRCH and EINVAL (a pid with no
// task any more) mean the thread is gone; anything else (EMFILE, ENOMEM)
// is the supervisor's failure, an internal error rather than "no such
// process" for a caller that is alive.
func openThread(tid int) (int, error) {
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	switch {
	case err == nil:
		return pidfd, nil
	case err == unix.ESRCH || err == unix.EINVAL:
		return -1, unix.ESRCH
	}
	return -1, fmt.Errorf("pidfd_open %d: %v", tid, err)
}

// getfd duplicates descriptor fd of the thread pidfd (thread tid) opens.
// EBADF is the caller's (no such descriptor) and ESRCH means the thread is
// gone or exiting; anything else is an internal error (see openThread).
func getfd(pidfd, tid, fd int) (int, error) {
	nfd, err := unix.PidfdGetfd(pidfd, fd, 0)
	switch {
	case err == nil:
		return nfd, nil
	case err == unix.EBADF || err == unix.ESRCH:
		return -1, err
	}
	return -1, fmt.Errorf("pidfd_getfd %d of %d: %v", fd, tid, err)
}

// close releases every cached pidfd.
func (p *pidfdCache) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.slots {
		if p.slots[i].ok {
			unix.Close(p.slots[i].fd)
			p.slots[i].ok = false
		}
	}
}

// CloseOnExec reports whether descriptor fd of thread tid is close-on-exec
// (/proc/TID/fdinfo shows the flag among the file's flags). A descriptor
// that is not open is EBADF.
func CloseOnExec(tid, fd int) (bool, error) {
	f, err := procfs.FDInfo(tid, fd)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, unix.EBADF
		}
		return false, err
	}
	fl, err := f.Uint("flags", 8)
	if err != nil {
		return false, fmt.Errorf("fdinfo of descriptor %d of %d: %w", fd, tid, err)
	}
	return fl&unix.O_CLOEXEC != 0, nil
}

// GetFD duplicates descriptor fd of thread tid into the supervisor.
func GetFD(tid, fd int) (int, error) {
	pidfd, err := openThread(tid)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pidfd)
	return getfd(pidfd, tid, fd)
}

func (c *Call) String() string {
	return fmt.Sprintf("tid %d syscall %d", c.Tid, c.Nr)
}
