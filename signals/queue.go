package signals

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Delivery is one signal to one process or thread, sent now or held for
// commit.
type Delivery struct {
	// Call names the system call that sent it, for messages.
	Call string
	Sig  int
	// Info is the caller's siginfo_t, replayed as given; nil for a plain
	// kill.
	Info []byte
	// Thread: the signal is for thread Tid alone (tkill, tgkill,
	// rt_tgsigqueueinfo); else for thread group Tgid.
	Thread    bool
	Tgid, Tid int

	// pidfd pins the target while the signal waits (a recycled pid is
	// never signalled); -1 when none could be opened: then the pid is used.
	pidfd int
}

// pinTarget opens a pidfd for the target. Only ESRCH (the target is gone)
// is an error: without a pidfd the delivery falls back to the pid.
func (d *Delivery) pinTarget() error {
	if d.pidfd >= 0 {
		return nil
	}
	id, flags := d.Tgid, 0
	if d.Thread {
		id, flags = d.Tid, unix.PIDFD_THREAD
	}
	fd, err := unix.PidfdOpen(id, flags)
	if err == unix.ESRCH {
		return err
	}
	if err == nil {
		d.pidfd = fd
	}
	return nil
}

// sendNow sends the signal: through the pidfd when there is one, else with
// the call that sent it (kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo).
func (d *Delivery) sendNow() error {
	var info unsafe.Pointer
	if d.Info != nil {
		info = unsafe.Pointer(&d.Info[0])
	}
	if d.pidfd >= 0 {
		flags := unix.PIDFD_SIGNAL_THREAD_GROUP
		if d.Thread {
			flags = unix.PIDFD_SIGNAL_THREAD
		}
		return retry(func() (uintptr, uintptr, unix.Errno) {
			return unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, uintptr(d.pidfd), uintptr(d.Sig), uintptr(info), uintptr(flags), 0, 0)
		})
	}
	switch {
	case d.Thread && info != nil:
		return retry(func() (uintptr, uintptr, unix.Errno) {
			return unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(d.Tgid), uintptr(d.Tid), uintptr(d.Sig), uintptr(info), 0, 0)
		})
	case d.Thread:
		return unix.Tgkill(d.Tgid, d.Tid, unix.Signal(d.Sig))
	case info != nil:
		return retry(func() (uintptr, uintptr, unix.Errno) {
			return unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(d.Tgid), uintptr(d.Sig), uintptr(info))
		})
	}
	return unix.Kill(d.Tgid, unix.Signal(d.Sig))
}

func retry(call func() (uintptr, uintptr, unix.Errno)) error {
	for {
		_, _, e := call()
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return e
	}
}

func (d *Delivery) close() {
	if d.pidfd >= 0 {
		unix.Close(d.pidfd)
		d.pidfd = -1
	}
}

// Queue holds the signals sent out of a transaction, in the order sent.
type Queue struct {
	mu sync.Mutex
	// items is guarded by mu.
	items []*Delivery
}

func (q *Queue) add(d *Delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, d)
}

// take empties the queue and returns what it held, oldest first.
func (q *Queue) take() []*Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	ds := q.items
	q.items = nil
	return ds
}

// Len returns how many signals wait for commit.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Pending returns a copy of the queued deliveries, oldest first.
func (q *Queue) Pending() []Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Delivery, len(q.items))
	for i, d := range q.items {
		out[i] = *d
	}
	return out
}
