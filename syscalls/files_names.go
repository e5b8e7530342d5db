package syscalls

import (
	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// Mkdir implements mkdir(2).
func Mkdir(k *Kernel, c *interpose.Call) interpose.Reply {
	return mkdirat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].ModeT())
}

// Mkdirat implements mkdirat(2).
func Mkdirat(k *Kernel, c *interpose.Call) interpose.Reply {
	return mkdirat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].ModeT())
}

func mkdirat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr uintptr, mode uint32) interpose.Reply {
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Mkdir(cl, at, path, mode&0o7777)
	})
}

// Mknod implements mknod(2).
func Mknod(k *Kernel, c *interpose.Call) interpose.Reply {
	return mknodat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), c.Args[1].ModeT(), c.Args[2].DevT())
}

// Mknodat implements mknodat(2).
func Mknodat(k *Kernel, c *interpose.Call) interpose.Reply {
	return mknodat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].ModeT(), c.Args[3].DevT())
}

func mknodat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr uintptr, mode uint32, dev uint64) interpose.Reply {
	switch mode & unix.S_IFMT {
	case 0:
		mode |= unix.S_IFREG
	case unix.S_IFREG, unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
	case unix.S_IFDIR:
		return interpose.Fail(unix.EPERM)
	default:
		return interpose.Fail(unix.EINVAL)
	}
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Mknod(cl, at, path, mode, dev)
	})
}

// Rmdir implements rmdir(2).
func Rmdir(k *Kernel, c *interpose.Call) interpose.Reply {
	return unlinkat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), unix.AT_REMOVEDIR)
}

// Unlink implements unlink(2).
func Unlink(k *Kernel, c *interpose.Call) interpose.Reply {
	return unlinkat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), 0 /* flags */)
}

// Unlinkat implements unlinkat(2).
func Unlinkat(k *Kernel, c *interpose.Call) interpose.Reply {
	return unlinkat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), int(c.Args[2].Int()))
}

func unlinkat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr uintptr, flags int) interpose.Reply {
	if flags&^unix.AT_REMOVEDIR != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Unlink(cl, at, path, flags)
	})
}

// Rename implements rename(2).
func Rename(k *Kernel, c *interpose.Call) interpose.Reply {
	return renameat2(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), unix.AT_FDCWD, c.Args[1].Pointer(), 0 /* flags */)
}

// Renameat implements renameat(2).
func Renameat(k *Kernel, c *interpose.Call) interpose.Reply {
	return renameat2(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Int(), c.Args[3].Pointer(), 0 /* flags */)
}

// Renameat2 implements renameat2(2).
func Renameat2(k *Kernel, c *interpose.Call) interpose.Reply {
	return renameat2(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Int(), c.Args[3].Pointer(), uint(c.Args[4].Uint()))
}

func renameat2(k *Kernel, c *interpose.Call, oldDirfd int32, oldAddr uintptr, newDirfd int32, newAddr uintptr, flags uint) interpose.Reply {
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE|unix.RENAME_WHITEOUT) != 0 ||
		flags&unix.RENAME_EXCHANGE != 0 && flags&(unix.RENAME_NOREPLACE|unix.RENAME_WHITEOUT) != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	newPath, err := c.ReadPath(newAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	return k.pathCall(c, oldDirfd, oldAddr, func(cl *vfs.Caller, oldAt *vfs.Handle, oldPath string) (int64, error) {
		newAt, done, err := k.at(c, cl, newDirfd, newPath)
		if err != nil {
			return 0, err
		}
		defer done()
		return 0, k.View.Rename(cl, oldAt, oldPath, newAt, newPath, flags)
	})
}

// Link implements link(2).
func Link(k *Kernel, c *interpose.Call) interpose.Reply {
	return linkat(k, c, unix.AT_FDCWD, c.Args[0].Pointer(), unix.AT_FDCWD, c.Args[1].Pointer(), 0 /* flags */)
}

// Linkat implements linkat(2).
func Linkat(k *Kernel, c *interpose.Call) interpose.Reply {
	return linkat(k, c, c.Args[0].Int(), c.Args[1].Pointer(), c.Args[2].Int(), c.Args[3].Pointer(), int(c.Args[4].Int()))
}

func linkat(k *Kernel, c *interpose.Call, oldDirfd int32, oldAddr uintptr, newDirfd int32, newAddr uintptr, flags int) interpose.Reply {
	if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	newPath, err := c.ReadPath(newAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	return k.pathCall(c, oldDirfd, oldAddr, func(cl *vfs.Caller, oldAt *vfs.Handle, oldPath string) (int64, error) {
		if oldPath == "" && flags&unix.AT_EMPTY_PATH == 0 {
			return 0, unix.ENOENT
		}
		newAt, done, err := k.at(c, cl, newDirfd, newPath)
		if err != nil {
			return 0, err
		}
		defer done()
		return 0, k.View.Link(cl, oldAt, oldPath, newAt, newPath, flags)
	})
}

// Symlink implements symlink(2).
func Symlink(k *Kernel, c *interpose.Call) interpose.Reply {
	return symlinkat(k, c, c.Args[0].Pointer(), unix.AT_FDCWD, c.Args[1].Pointer())
}

// Symlinkat implements symlinkat(2).
func Symlinkat(k *Kernel, c *interpose.Call) interpose.Reply {
	return symlinkat(k, c, c.Args[0].Pointer(), c.Args[1].Int(), c.Args[2].Pointer())
}

func symlinkat(k *Kernel, c *interpose.Call, targetAddr uintptr, dirfd int32, pathAddr uintptr) interpose.Reply {
	target, err := c.ReadPath(targetAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if target == "" {
		return interpose.Fail(unix.ENOENT)
	}
	return k.pathCall(c, dirfd, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Symlink(cl, target, at, path)
	})
}
