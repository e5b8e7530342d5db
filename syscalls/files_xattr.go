package syscalls

import (
	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// XATTR_NAME_MAX and XATTR_SIZE_MAX of <linux/limits.h>.
const (
	xattrNameMax = 255
	xattrSizeMax = 65536
)

// readXattrName copies in an attribute name as the kernel does: an empty or
// too long name is ERANGE.
func readXattrName(c *interpose.Call, addr uintptr) (string, error) {
	name, err := c.ReadString(addr, xattrNameMax+1)
	if err == unix.ENAMETOOLONG || err == nil && name == "" {
		return "", unix.ERANGE
	}
	return name, err
}

// Setxattr implements setxattr(2).
func Setxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return setxattr(k, c, vfs.XattrOp{})
}

// Lsetxattr implements lsetxattr(2).
func Lsetxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return setxattr(k, c, vfs.XattrOp{NoFollow: true})
}

// Fsetxattr implements fsetxattr(2).
func Fsetxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return setxattr(k, c, vfs.XattrOp{EmptyAt: true})
}

func setxattr(k *Kernel, c *interpose.Call, op vfs.XattrOp) interpose.Reply {
	target := c.Args[0]
	nameAddr := c.Args[1].Pointer()
	valueAddr := c.Args[2].Pointer()
	size := c.Args[3].SizeT()
	flags := int(c.Args[4].Int())
	if flags&^(unix.XATTR_CREATE|unix.XATTR_REPLACE) != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	name, err := readXattrName(c, nameAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if size > xattrSizeMax {
		return interpose.Fail(unix.E2BIG)
	}
	value := make([]byte, size)
	if err := c.Read(valueAddr, value); err != nil {
		return k.reply(c, 0, err)
	}
	return xattrTarget(k, c, target, op, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Setxattr(cl, at, path, op, name, value, flags)
	})
}

// xattrTarget runs fn on the object of an xattr call: a path, or with
// op.EmptyAt a descriptor.
func xattrTarget(k *Kernel, c *interpose.Call, target interpose.Arg, op vfs.XattrOp, fn func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error)) interpose.Reply {
	if op.EmptyAt {
		return k.fdCall(c, target.Int(), func(cl *vfs.Caller, h *vfs.Handle) (int64, error) { return fn(cl, h, "") })
	}
	return k.pathCall(c, unix.AT_FDCWD, target.Pointer(), func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if path == "" {
			return 0, unix.ENOENT
		}
		return fn(cl, at, path)
	})
}

// Getxattr implements getxattr(2).
func Getxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return getxattr(k, c, vfs.XattrOp{})
}

// Lgetxattr implements lgetxattr(2).
func Lgetxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return getxattr(k, c, vfs.XattrOp{NoFollow: true})
}

// Fgetxattr implements fgetxattr(2).
func Fgetxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return getxattr(k, c, vfs.XattrOp{EmptyAt: true})
}

func getxattr(k *Kernel, c *interpose.Call, op vfs.XattrOp) interpose.Reply {
	target := c.Args[0]
	nameAddr := c.Args[1].Pointer()
	valueAddr := c.Args[2].Pointer()
	size := c.Args[3].SizeT()
	name, err := readXattrName(c, nameAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if size > xattrSizeMax {
		size = xattrSizeMax
	}
	return xattrTarget(k, c, target, op, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		value, n, err := k.View.Getxattr(cl, at, path, op, name, int(size))
		if err != nil {
			return 0, err
		}
		return int64(n), c.Write(valueAddr, value)
	})
}

// Listxattr implements listxattr(2).
func Listxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return listxattr(k, c, vfs.XattrOp{})
}

// Llistxattr implements llistxattr(2).
func Llistxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return listxattr(k, c, vfs.XattrOp{NoFollow: true})
}

// Flistxattr implements flistxattr(2).
func Flistxattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return listxattr(k, c, vfs.XattrOp{EmptyAt: true})
}

func listxattr(k *Kernel, c *interpose.Call, op vfs.XattrOp) interpose.Reply {
	target := c.Args[0]
	listAddr := c.Args[1].Pointer()
	size := c.Args[2].SizeT()
	if size > xattrSizeMax {
		size = xattrSizeMax
	}
	return xattrTarget(k, c, target, op, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		list, n, err := k.View.Listxattr(cl, at, path, op, int(size))
		if err != nil {
			return 0, err
		}
		return int64(n), c.Write(listAddr, list)
	})
}

// Removexattr implements removexattr(2).
func Removexattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return removexattr(k, c, vfs.XattrOp{})
}

// Lremovexattr implements lremovexattr(2).
func Lremovexattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return removexattr(k, c, vfs.XattrOp{NoFollow: true})
}

// Fremovexattr implements fremovexattr(2).
func Fremovexattr(k *Kernel, c *interpose.Call) interpose.Reply {
	return removexattr(k, c, vfs.XattrOp{EmptyAt: true})
}

func removexattr(k *Kernel, c *interpose.Call, op vfs.XattrOp) interpose.Reply {
	target := c.Args[0]
	name, err := readXattrName(c, c.Args[1].Pointer())
	if err != nil {
		return k.reply(c, 0, err)
	}
	return xattrTarget(k, c, target, op, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		return 0, k.View.Removexattr(cl, at, path, op, name)
	})
}
