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

// capsetEffective makes eff the calling thread's effective set, keeping
// the permitted and inheritable sets the supervisor started with (the
// supervisor never changes them, so they need no capget per call).
func (s *Self) capsetEffective(eff uint64) error {
	eff &= s.capPerm
	d := [2]capData{
		{effective: uint32(eff), permitted: uint32(s.capPerm), inheritable: uint32(s.capInh)},
		{effective: uint32(eff >> 32), permitted: uint32(s.capPerm >> 32), inheritable: uint32(s.capInh >> 32)},
	}
	h := capHeader{version: unix.LINUX_CAPABILITY_VERSION_3}
	_, _, e := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
	if e != 0 {
		return e
	}
	return nil
}

// Self describes the supervisor's own file-system credentials, read once.
type Self struct {
	uid, gid                uint32
	groups                  []uint32
	capEff, capPerm, capInh uint64
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
		capEff:  uint64(d[0].effective) | uint64(d[1].effective)<<32,
		capPerm: uint64(d[0].permitted) | uint64(d[1].permitted)<<32,
		capInh:  uint64(d[0].inheritable) | uint64(d[1].inheritable)<<32}
	for _, g := range gs {
		s.groups = append(s.groups, uint32(g))
	}
	return s, nil
}

// Same reports whether c needs no switch: it has the supervisor's identity.
func (s *Self) Same(c *Cred) bool {
	return c.FSUID == s.uid && c.FSGID == s.gid && c.CapEff&fsCaps == s.capEff&fsCaps &&
		sameGroups(c.Groups, s.groups)
}

func sameGroups(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
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
//
// Every call is served this way, so the switch makes only the system
// calls that change something: a package's maintainer scripts and
// man-db's trigger run as other users, and each switch costs as much as
// the call it serves.
func (s *Self) AsCaller(c *Cred, fn func() error) error {
	if s.Same(c) {
		return fn()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	groups := !sameGroups(c.Groups, s.groups)
	if groups {
		if err := setgroups(c.Groups); err != nil {
			return err
		}
	}
	if c.FSGID != s.gid {
		unix.RawSyscall(unix.SYS_SETFSGID, uintptr(c.FSGID), 0, 0)
	}
	if c.FSUID != s.uid {
		unix.RawSyscall(unix.SYS_SETFSUID, uintptr(c.FSUID), 0, 0)
	}
	// Changing fsuid from 0 dropped the file-system capabilities; the
	// caller may hold some (or, as root, lack some): set them as its.
	capErr := s.capsetEffective(c.CapEff)
	defer func() {
		// Capabilities first: they are what allows the changes back.
		s.capsetEffective(s.capEff)
		if c.FSUID != s.uid {
			unix.RawSyscall(unix.SYS_SETFSUID, uintptr(s.uid), 0, 0)
			// Changing fsuid back to 0 raises every permitted
			// file-system capability; drop again any that the
			// supervisor did not have in effect.
			if s.uid == 0 && s.capPerm&fsCaps&^s.capEff != 0 {
				s.capsetEffective(s.capEff)
			}
		}
		if c.FSGID != s.gid {
			unix.RawSyscall(unix.SYS_SETFSGID, uintptr(s.gid), 0, 0)
		}
		if groups {
			setgroups(s.groups)
		}
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
