package interpose

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp user-notification structures of <linux/seccomp.h>, which
// golang.org/x/sys/unix does not define. Their sizes are checked at compile
// time against the sizes the kernel encodes in the ioctl numbers.

type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// seccompNotif is struct seccomp_notif.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// seccompNotifAddfd is struct seccomp_notif_addfd.
type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// Compile-time size checks: each constant underflows (a compile error) if the
// Go struct and the ioctl's encoded size disagree in either direction.
const (
	_ = uint16(unsafe.Sizeof(seccompNotif{}) - uintptr(unix.SECCOMP_IOCTL_NOTIF_RECV>>16&0x3fff))
	_ = uint16(uintptr(unix.SECCOMP_IOCTL_NOTIF_RECV>>16&0x3fff) - unsafe.Sizeof(seccompNotif{}))
	_ = uint16(unsafe.Sizeof(seccompNotifResp{}) - uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND>>16&0x3fff))
	_ = uint16(uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND>>16&0x3fff) - unsafe.Sizeof(seccompNotifResp{}))
	_ = uint16(unsafe.Sizeof(seccompNotifAddfd{}) - uintptr(unix.SECCOMP_IOCTL_NOTIF_ADDFD>>16&0x3fff))
	_ = uint16(uintptr(unix.SECCOMP_IOCTL_NOTIF_ADDFD>>16&0x3fff) - unsafe.Sizeof(seccompNotifAddfd{}))
)

func notifRecv(fd int, n *seccompNotif) error {
	*n = seccompNotif{}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_RECV), uintptr(unsafe.Pointer(n)))
	if e != 0 {
		return e
	}
	return nil
}

// retryInterrupted makes a listener ioctl that takes the listener's lock
// with mutex_lock_interruptible (SEND, ID_VALID, SET_FLAGS; see
// kernel/seccomp.c) until the lock wait is not interrupted. While another
// thread holds the lock (a worker receiving or replying, a tracee queueing
// its call), a signal to the calling thread — Go's preemption SIGURG, the
// SIGCHLD of every ptrace stop — ends the wait with EINTR before the ioctl
// has done anything: that says nothing about the notification. Taken for
// a failure, it made Valid answer ESRCH to live callers, and a reply
// silently lost left its caller waiting for ever.
func retryInterrupted(ioctl func() unix.Errno) unix.Errno {
	for {
		e := ioctl()
		if e != unix.EINTR {
			return e
		}
		interruptedIoctls.Add(1)
	}
}

// interruptedIoctls counts the listener ioctls retryInterrupted made again,
// for tests.
var interruptedIoctls atomic.Int64

func notifSend(fd int, r *seccompNotifResp) error {
	e := retryInterrupted(func() unix.Errno {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND), uintptr(unsafe.Pointer(r)))
		return e
	})
	if e != 0 {
		return e
	}
	return nil
}

// notifIDValid reports whether the notification id is still pending: the
// tracee has not been killed or interrupted since the supervisor received
// it (ENOENT otherwise). It is a raw system call (no runtime bookkeeping):
// ID_VALID never blocks for long, and it is made once per intercepted call.
func notifIDValid(fd int, id uint64) error {
	e := retryInterrupted(func() unix.Errno {
		_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_ID_VALID), uintptr(unsafe.Pointer(&id)))
		return e
	})
	if e != 0 {
		return e
	}
	return nil
}

func notifAddfd(fd int, a *seccompNotifAddfd) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_ADDFD), uintptr(unsafe.Pointer(a)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// setSyncWakeUp asks the kernel to wake the tracee on the supervisor's CPU
// (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6): about half the round trip.
func setSyncWakeUp(fd int) error {
	e := retryInterrupted(func() unix.Errno {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS), uintptr(unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP))
		return e
	})
	if e != 0 {
		return e
	}
	return nil
}
