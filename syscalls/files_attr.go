package syscalls

import (
	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// Chmod implements chmod(2).
func Chmod(k *Kernel, c *interpose.Call) interpose.Reply {
	return fchmodat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].ModeT(), 0 /* flags */)
}

// Fchmodat implements fchmodat(2) (the system call has no flags).
func Fchmodat(k *Kernel, c *interpose.Call) interpose.Reply {
	return fchmodat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].ModeT(), 0 /* flags */)
}

// Fchmodat2 implements fchmodat2(2).
func Fchmodat2(k *Kernel, c *interpose.Call) interpose.Reply {
	return fchmodat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].ModeT(), int(c.Args[3].Int()))
}

// Fchmod implements fchmod(2).
func Fchmod(k *Kernel, c *interpose.Call) interpose.Reply {
	mode := c.Args[1].ModeT()
	return k.fdCall(c, c.Args[0].Int(), func(cl *vfs.Caller, h *vfs.Handle) (int64, error) {
		return 0, k.View.Chmod(cl, h, "", mode&0o7777, unix.AT_EMPTY_PATH)
	})
}

func fchmodat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr uintptr, mode uint32, flags int) interpose.Reply {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Chmod(cl, at, path, mode&0o7777, flags)
	})
}

// Chown implements chown(2).
func Chown(k *Kernel, c *interpose.Call) interpose.Reply {
	return fchownat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].UIDT(), c.Args[2].UIDT(), 0 /* flags */)
}

// Lchown implements lchown(2).
func Lchown(k *Kernel, c *interpose.Call) interpose.Reply {
	return fchownat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].UIDT(), c.Args[2].UIDT(), unix.AT_SYMLINK_NOFOLLOW)
}

// Fchownat implements fchownat(2).
func Fchownat(k *Kernel, c *interpose.Call) interpose.Reply {
	return fchownat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].UIDT(), c.Args[3].UIDT(), int(c.Args[4].Int()))
}

// Fchown implements fchown(2).
func Fchown(k *Kernel, c *interpose.Call) interpose.Reply {
	uid, gid := c.Args[1].UIDT(), c.Args[2].UIDT()
	return k.fdCall(c, c.Args[0].Int(), func(cl *vfs.Caller, h *vfs.Handle) (int64, error) {
		return 0, k.View.Chown(cl, h, "", uid, gid, unix.AT_EMPTY_PATH)
	})
}

func fchownat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr uintptr, uid, gid uint32, flags int) interpose.Reply {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Chown(cl, at, path, uid, gid, flags)
	})
}

// Utime implements utime(2): struct utimbuf { time_t actime, modtime; }.
func Utime(k *Kernel, c *interpose.Call) interpose.Reply {
	pathAddr := c.Args[0].Pointer()
	timesAddr := c.Args[1].Pointer()
	var ts *[2]unix.Timespec
	if timesAddr != 0 {
		var ub [2]int64
		if err := interpose.ReadValue(c.Memory, timesAddr, &ub); err != nil {
			return k.reply(c, 0, err)
		}
		ts = &[2]unix.Timespec{{Sec: ub[0]}, {Sec: ub[1]}}
	}
	return utimensat(k, c, unix.AT_FDCWD, pathAddr, ts, 0 /* flags */)
}

// Utimes implements utimes(2).
func Utimes(k *Kernel, c *interpose.Call) interpose.Reply {
	return futimesat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].Pointer())
}

// Futimesat implements futimesat(2).
func Futimesat(k *Kernel, c *interpose.Call) interpose.Reply {
	return futimesat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Pointer())
}

func futimesat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr, timesAddr uintptr) interpose.Reply {
	var ts *[2]unix.Timespec
	if timesAddr != 0 {
		var tv [2]unix.Timeval
		if err := interpose.ReadValue(c.Memory, timesAddr, &tv); err != nil {
			return k.reply(c, 0, err)
		}
		for _, t := range tv {
			if t.Usec < 0 || t.Usec >= 1000000 {
				return interpose.Fail(unix.EINVAL)
			}
		}
		ts = &[2]unix.Timespec{{Sec: tv[0].Sec, Nsec: tv[0].Usec * 1000}, {Sec: tv[1].Sec, Nsec: tv[1].Usec * 1000}}
	}
	// do_utimes: a NULL path with a descriptor is the descriptor's object,
	// for futimesat as for utimensat (utimes passes AT_FDCWD: EFAULT).
	return utimensat(k, c, dirfd, pathAddr, ts, 0 /* flags */)
}

// Utimensat implements utimensat(2), and futimens (a NULL path).
func Utimensat(k *Kernel, c *interpose.Call) interpose.Reply {
	dirfd := c.Args[0].Int()
	pathAddr := c.Args[1].Pointer()
	timesAddr := c.Args[2].Pointer()
	flags := int(c.Args[3].Int())
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	var ts *[2]unix.Timespec
	if timesAddr != 0 {
		ts = new([2]unix.Timespec)
		if err := interpose.ReadValue(c.Memory, timesAddr, ts); err != nil {
			return k.reply(c, 0, err)
		}
		for _, t := range ts {
			if t.Nsec != unix.UTIME_NOW && t.Nsec != unix.UTIME_OMIT && (t.Nsec < 0 || t.Nsec >= 1e9) {
				return interpose.Fail(unix.EINVAL)
			}
		}
	}
	return utimensat(k, c, dirfd, pathAddr, ts, flags)
}

func utimensat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr uintptr, ts *[2]unix.Timespec, flags int) interpose.Reply {
	if pathAddr == 0 {
		if dirfd == unix.AT_FDCWD {
			return interpose.Fail(unix.EFAULT)
		}
		return k.fdCall(c, dirfd, func(cl *vfs.Caller, h *vfs.Handle) (int64, error) {
			return 0, k.View.Utimens(cl, h, "", ts, flags|unix.AT_EMPTY_PATH)
		})
	}
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if path == "" && flags&unix.AT_EMPTY_PATH == 0 {
			return 0, unix.ENOENT
		}
		return 0, k.View.Utimens(cl, at, path, ts, flags)
	})
}

// Truncate implements truncate(2).
func Truncate(k *Kernel, c *interpose.Call) interpose.Reply {
	pathAddr := c.Args[0].Pointer()
	length := c.Args[1].OffT()
	if length < 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.pathCall(c, unix.AT_FDCWD, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if path == "" {
			return 0, unix.ENOENT
		}
		return 0, k.View.Truncate(cl, at, path, length)
	})
}
