package sysx

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Cred is the part of a task's credentials that the kernel consults for
// file-system access: fsuid/fsgid, supplementary groups and effective
// capabilities.
type Cred struct {
	FSUID, FSGID uint32
	Groups       []uint32
	CapEff       uint64
}

// fsCaps are the capabilities the kernel drops from the effective set when
// fsuid changes from 0 (capabilities(7), "Effect of user ID changes").
const fsCaps = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH |
	1<<unix.CAP_FOWNER | 1<<unix.CAP_FSETID | 1<<unix.CAP_LINUX_IMMUTABLE |
	1<<unix.CAP_MAC_OVERRIDE | 1<<unix.CAP_MKNOD

type capHeader struct {
	version uint32
	pid     int32
}

type capData struct {
	effective, permitted, inheritable uint32
}

func capget() ([2]capData, error) {
	var d [2]capData
	h := capHeader{version: unix.LINUX_CAPABILITY_VERSION_3}
	_, _, e := unix.RawSyscall(unix.SYS_CAPGET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
	if e != 0 {
		return d, e
	}
	return d, nil
}

func capsetEffective(eff uint64) error {
	d, err := capget()
	if err != nil {
		return err
	}
	perm := uint64(d[0].permitted) | uint64(d[1].permitted)<<32
	eff &= perm
	d[0].effective, d[1].effective = uint32(eff), uint32(eff>>32)
	h := capHeader{version: unix.LINUX_CAPABILITY_VERSION_3}
	_, _, e := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
	if e != 0 {
		return e
	}
	return nil
}

// Self describes the supervisor's own file-system credentials, read once.
type Self struct {
	uid, gid uint32
	groups   []uint32
	capEff   uint64
}

// ReadSelf records the calling process's credentials.
func ReadSelf() (*Self, error) {
	d, err := capget()
	if err != nil {
		return nil, err
	}
	gs, err := unix.Getgroups()
	if err != nil {
		return nil, err
	}
	s := &Self{uid: uint32(unix.Getuid()), gid: uint32(unix.Getgid()),
		capEff: uint64(d[0].effective) | uint64(d[1].effective)<<32}
	for _, g := range gs {
		s.groups = append(s.groups, uint32(g))
	}
	return s, nil
}

// Same reports whether c needs no switch: it has the supervisor's identity.
func (s *Self) Same(c *Cred) bool {
	if c.FSUID != s.uid || c.FSGID != s.gid || c.CapEff&fsCaps != s.capEff&fsCaps {
		return false
	}
	if len(c.Groups) != len(s.groups) {
		return false
	}
	for i := range c.Groups {
		if c.Groups[i] != s.groups[i] {
			return false
		}
	}
	return true
}

// AsCaller runs fn on the calling OS thread with c's file-system
// credentials, so that the kernel makes every permission decision exactly
// as it would for the caller, then restores the supervisor's. Linux
// credentials are per thread and the raw calls below change only this
// thread's (unlike syscall.Setfsuid in Go, which changes every thread).
func (s *Self) AsCaller(c *Cred, fn func() error) error {
	if s.Same(c) {
		return fn()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := setgroups(c.Groups); err != nil {
		return err
	}
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(c.FSGID), 0, 0)
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(c.FSUID), 0, 0)
	// Changing fsuid from 0 dropped the file-system capabilities; the
	// caller may hold some (or, as root, lack some): set them as its.
	capErr := capsetEffective(c.CapEff)
	defer func() {
		capsetEffective(s.capEff)
		unix.RawSyscall(unix.SYS_SETFSUID, uintptr(s.uid), 0, 0)
		unix.RawSyscall(unix.SYS_SETFSGID, uintptr(s.gid), 0, 0)
		setgroups(s.groups)
		capsetEffective(s.capEff)
	}()
	if capErr != nil {
		return capErr
	}
	return fn()
}

func setgroups(gs []uint32) error {
	var p unsafe.Pointer
	if len(gs) > 0 {
		p = unsafe.Pointer(&gs[0])
	}
	_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0)
	if e != 0 {
		return e
	}
	return nil
}

// Retry runs fn until it returns anything but EINTR.
func Retry(fn func() error) error {
	for {
		err := fn()
		if err != unix.EINTR {
			return err
		}
	}
}
