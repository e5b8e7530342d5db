package syscalls

import (
	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// Stat implements stat(2).
func Stat(k *Kernel, c *interpose.Call) interpose.Reply {
	return newfstatat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].Pointer(), 0 /* flags */)
}

// Lstat implements lstat(2).
func Lstat(k *Kernel, c *interpose.Call) interpose.Reply {
	return newfstatat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].Pointer(), unix.AT_SYMLINK_NOFOLLOW)
}

// Newfstatat implements newfstatat(2) (fstatat).
func Newfstatat(k *Kernel, c *interpose.Call) interpose.Reply {
	return newfstatat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Pointer(), int(c.Args[3].Int()))
}

const statFlags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_EMPTY_PATH | unix.AT_NO_AUTOMOUNT

func newfstatat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr, statAddr uintptr, flags int) interpose.Reply {
	if flags&^statFlags != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.nullablePathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if path == "" && pathAddr == 0 && flags&unix.AT_EMPTY_PATH == 0 {
			return 0, unix.EFAULT
		}
		st, err := k.View.Stat(cl, at, path, flags)
		if err != nil {
			return 0, err
		}
		return 0, interpose.WriteValue(c.Memory, statAddr, &st)
	})
}

// Statx implements statx(2).
func Statx(k *Kernel, c *interpose.Call) interpose.Reply {
	dirfd := c.Args[0].Int()
	pathAddr := c.Args[1].Pointer()
	flags := int(c.Args[2].Int())
	mask := c.Args[3].Uint()
	statxAddr := c.Args[4].Pointer()
	if mask&unix.STATX__RESERVED != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.nullablePathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if pathAddr == 0 {
			// Since Linux 6.11 a NULL path means AT_EMPTY_PATH.
			flags |= unix.AT_EMPTY_PATH
		}
		stx, err := k.View.Statx(cl, at, path, flags, mask)
		if err != nil {
			return 0, err
		}
		return 0, interpose.WriteValue(c.Memory, statxAddr, &stx)
	})
}

// Statfs implements statfs(2).
func Statfs(k *Kernel, c *interpose.Call) interpose.Reply {
	pathAddr := c.Args[0].Pointer()
	bufAddr := c.Args[1].Pointer()
	return k.pathCall(c, unix.AT_FDCWD, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if path == "" {
			return 0, unix.ENOENT
		}
		st, err := k.View.Statfs(cl, at, path)
		if err != nil {
			return 0, err
		}
		return 0, interpose.WriteValue(c.Memory, bufAddr, &st)
	})
}

// Access implements access(2).
func Access(k *Kernel, c *interpose.Call) interpose.Reply {
	return faccessat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].Uint(), 0 /* flags */)
}

// Faccessat implements faccessat(2) (the system call has no flags).
func Faccessat(k *Kernel, c *interpose.Call) interpose.Reply {
	return faccessat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Uint(), 0 /* flags */)
}

// Faccessat2 implements faccessat2(2).
func Faccessat2(k *Kernel, c *interpose.Call) interpose.Reply {
	return faccessat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Uint(), int(c.Args[3].Int()))
}

func faccessat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr uintptr, mode uint32, flags int) interpose.Reply {
	if mode&^uint32(unix.R_OK|unix.W_OK|unix.X_OK) != 0 || flags&^(unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Access(cl, at, path, mode, flags)
	})
}

// Readlink implements readlink(2).
func Readlink(k *Kernel, c *interpose.Call) interpose.Reply {
	return readlinkat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].Pointer(), c.Args[2].Int())
}

// Readlinkat implements readlinkat(2).
func Readlinkat(k *Kernel, c *interpose.Call) interpose.Reply {
	return readlinkat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Pointer(), c.Args[3].Int())
}

func readlinkat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr, bufAddr uintptr, bufSize int32) interpose.Reply {
	if bufSize <= 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		target, err := k.View.Readlink(cl, at, path)
		if err != nil {
			return 0, err
		}
		b := []byte(target)
		if len(b) > int(bufSize) {
			b = b[:bufSize]
		}
		return int64(len(b)), c.Write(bufAddr, b)
	})
}
