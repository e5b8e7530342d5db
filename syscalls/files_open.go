package syscalls

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// Open implements open(2).
func Open(k *Kernel, c *interpose.Call) interpose.Reply {
	pathAddr := c.Args[0].Pointer()
	flags := uint64(uint32(c.Args[1].Int()))
	mode := c.Args[2].ModeT()
	return openat(k, c, unix.AT_FDCWD, pathAddr, vfs.OpenHow{Flags: flags, Mode: mode})
}

// Openat implements openat(2).
func Openat(k *Kernel, c *interpose.Call) interpose.Reply {
	dirfd := c.Args[0].Int()
	pathAddr := c.Args[1].Pointer()
	flags := uint64(uint32(c.Args[2].Int()))
	mode := c.Args[3].ModeT()
	return openat(k, c, dirfd, pathAddr, vfs.OpenHow{Flags: flags, Mode: mode})
}

// Creat implements creat(2): open(path, O_CREAT|O_WRONLY|O_TRUNC, mode).
func Creat(k *Kernel, c *interpose.Call) interpose.Reply {
	pathAddr := c.Args[0].Pointer()
	mode := c.Args[1].ModeT()
	return openat(k, c, unix.AT_FDCWD, pathAddr, vfs.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, Mode: mode})
}

// validOpenFlags is the kernel's VALID_OPEN_FLAGS (include/linux/fcntl.h);
// oPathFlags the flags O_PATH allows beside it (O_PATH_FLAGS, fs/open.c).
const (
	validOpenFlags = unix.O_ACCMODE | unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC |
		unix.O_APPEND | unix.O_NONBLOCK | unix.O_SYNC | unix.O_DSYNC | unix.O_ASYNC | unix.O_DIRECT |
		oLargefile | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOATIME | unix.O_CLOEXEC |
		unix.O_PATH | unix.O_TMPFILE
	oPathFlags = unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_PATH | unix.O_CLOEXEC
)

// openHowSizeVer0 is OPEN_HOW_SIZE_VER0.
const openHowSizeVer0 = 24

// Openat2 implements openat2(2).
func Openat2(k *Kernel, c *interpose.Call) interpose.Reply {
	dirfd := c.Args[0].Int()
	pathAddr := c.Args[1].Pointer()
	howAddr := c.Args[2].Pointer()
	size := c.Args[3].SizeT()
	if size < openHowSizeVer0 {
		return interpose.Fail(unix.EINVAL)
	}
	if size > 4096 {
		return interpose.Fail(unix.E2BIG)
	}
	buf := make([]byte, size)
	if err := c.Read(howAddr, buf); err != nil {
		return k.reply(c, 0, err)
	}
	how, err := decodeOpenHow(buf)
	if err != nil {
		return k.reply(c, 0, err)
	}
	return openat(k, c, dirfd, pathAddr, how)
}

// decodeOpenHow decodes openat2's struct open_how of len(buf) bytes
// (between OPEN_HOW_SIZE_VER0 and a page) and checks its mode and flags
// as copy_struct_from_user and build_open_flags do, before any lookup.
func decodeOpenHow(buf []byte) (vfs.OpenHow, error) {
	if len(buf) < openHowSizeVer0 {
		return vfs.OpenHow{}, unix.EINVAL
	}
	// copy_struct_from_user: bytes past the version we know must be zero.
	for _, b := range buf[openHowSizeVer0:] {
		if b != 0 {
			return vfs.OpenHow{}, unix.E2BIG
		}
	}
	how := *(*unix.OpenHow)(unsafe.Pointer(&buf[0]))
	// open(2) and openat(2) drop flags they do not know, and every flag
	// but a few beside O_PATH; openat2 refuses them (build_open_flags).
	if how.Flags&^validOpenFlags != 0 || how.Flags&unix.O_PATH != 0 && how.Flags&^oPathFlags != 0 {
		return vfs.OpenHow{}, unix.EINVAL
	}
	// A mode only with a flag that creates (O_CREAT, __O_TMPFILE).
	if how.Mode > 0o7777 || (how.Mode != 0 && how.Flags&(unix.O_CREAT|oTmpfileBit) == 0) {
		return vfs.OpenHow{}, unix.EINVAL
	}
	h := vfs.OpenHow{Flags: how.Flags, Mode: uint32(how.Mode), Resolve: how.Resolve}
	return h, vfs.CheckOpenHow(h)
}

// oTmpfileBit is __O_TMPFILE (O_TMPFILE without O_DIRECTORY).
const oTmpfileBit = unix.O_TMPFILE &^ unix.O_DIRECTORY

func openat(k *Kernel, c *interpose.Call, dirfd int32, pathAddr uintptr, how vfs.OpenHow) interpose.Reply {
	if how.Flags&(unix.O_CREAT|unix.O_TMPFILE) == 0 && how.Resolve == 0 {
		how.Mode = 0 // ignored by open(2) unless creating
	}
	path, err := c.ReadPath(pathAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	enter := k.enter
	if how.Resolve&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) != 0 {
		enter = k.enterScoped
	}
	cl, at, leave, err := enter(c, dirfd, path)
	if err != nil {
		return k.reply(c, 0, err)
	}
	defer leave()
	fd, err := k.View.Open(cl, at, path, how)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if k.Determ != nil {
		if fd, err = k.determinedFile(c.Tid, fd, int(how.Flags)); err != nil {
			return k.reply(c, 0, err)
		}
	}
	return interpose.InstallFD(fd, how.Flags&unix.O_CLOEXEC != 0)
}
