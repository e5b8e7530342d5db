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

// atStatxSyncType is AT_STATX_SYNC_TYPE, which x/sys/unix lacks.
const atStatxSyncType = unix.AT_STATX_FORCE_SYNC | unix.AT_STATX_DONT_SYNC

// statFlags are the flags vfs_statx knows (AT_STATX_FORCE_SYNC and
// AT_STATX_DONT_SYNC are accepted by fstatat too).
const statFlags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_EMPTY_PATH | unix.AT_NO_AUTOMOUNT | atStatxSyncType

// statCall runs fn for a call of the stat family, in the order of
// fs/stat.c: a NULL path with AT_EMPTY_PATH, or an empty one, on a
// descriptor asks for the descriptor itself (getname_maybe_null, then
// vfs_fstat or do_statx_fd), which looks at no other flag; anything else
// goes through vfs_statx, which refuses unknown flags before the lookup —
// even before the error of a path it could not copy in (a NULL path
// without AT_EMPTY_PATH is EFAULT).
func (k *Kernel) statCall(c *interpose.Call, dirfd int32, pathAddr uintptr, flags int,
	fn func(cl *vfs.Caller, at *vfs.Handle, path string, flags int) (int64, error)) interpose.Reply {
	empty := flags&unix.AT_EMPTY_PATH != 0
	var path string
	var err error
	if pathAddr != 0 || !empty {
		path, err = c.ReadPath(pathAddr)
	}
	if err == nil && path == "" && empty && dirfd >= 0 {
		flags &= statFlags
	} else if flags&^statFlags != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	if err != nil {
		return k.reply(c, 0, err)
	}
	return k.resolvedCall(c, dirfd, path, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return fn(cl, at, path, flags)
	})
}

func newfstatat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr, statAddr uintptr, flags int) interpose.Reply {
	return k.statCall(c, dirfd, pathAddr, flags, func(cl *vfs.Caller, at *vfs.Handle, path string, flags int) (int64, error) {
		st, err := k.View.Stat(cl, at, path, flags)
		if err != nil {
			return 0, err
		}
		return 0, interpose.WriteValue(c.Memory, statAddr, &st)
	})
}

// statxArgsErr is do_statx's and do_statx_fd's check of statx's flags
// and mask, made before everything else.
func statxArgsErr(flags int, mask uint32) error {
	if mask&unix.STATX__RESERVED != 0 || flags&atStatxSyncType == atStatxSyncType {
		return unix.EINVAL
	}
	return nil
}

// Statx implements statx(2).
func Statx(k *Kernel, c *interpose.Call) interpose.Reply {
	dirfd := c.Args[0].Int()
	pathAddr := c.Args[1].Pointer()
	flags := int(c.Args[2].Int())
	mask := c.Args[3].Uint()
	statxAddr := c.Args[4].Pointer()
	if err := statxArgsErr(flags, mask); err != nil {
		return k.reply(c, 0, err)
	}
	return k.statCall(c, dirfd, pathAddr, flags, func(cl *vfs.Caller, at *vfs.Handle, path string, flags int) (int64, error) {
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
