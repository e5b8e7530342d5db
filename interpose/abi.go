package interpose

import (
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

// ioctlSize extracts the argument size encoded in an _IOC number.
func ioctlSize(req uint) uintptr { return uintptr(req>>16) & 0x3fff }

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

// auditArchX8664 is AUDIT_ARCH_X86_64; the filter refuses every other ABI.
const auditArchX8664 = 0xc000003e

func notifRecv(fd int, n *seccompNotif) error {
	*n = seccompNotif{}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_RECV), uintptr(unsafe.Pointer(n)))
	if e != 0 {
		return e
	}
	return nil
}

func notifSend(fd int, r *seccompNotifResp) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND), uintptr(unsafe.Pointer(r)))
	if e != 0 {
		return e
	}
	return nil
}

// notifIDValid reports whether the notification id is still pending: the
// tracee has not been killed or interrupted since the supervisor received it.
func notifIDValid(fd int, id uint64) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_ID_VALID), uintptr(unsafe.Pointer(&id)))
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
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS), uintptr(unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP))
	if e != 0 {
		return e
	}
	return nil
}
