package vfs

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
)

// An inode's attributes that chattr and xfs_io change — its flags
// (FS_IOC_SETFLAGS), its fsxattr (FS_IOC_FSSETXATTR) and its generation
// (FS_IOC_SETVERSION) — are changed by an ioctl on any descriptor of it:
// Linux asks for ownership, not write access, so a read-only descriptor
// of a host original would change the host at once. The ioctl is trapped
// by request number and carried out here, on the transaction's copy of
// the object.

// InodeAttrKind is the ioctl of an InodeAttrChange.
type InodeAttrKind uint8

const (
	// AttrFlags is FS_IOC_SETFLAGS: Value is the new FS_*_FL flags.
	AttrFlags InodeAttrKind = iota
	// AttrFsxattr is FS_IOC_FSSETXATTR: Fsx is the new struct fsxattr.
	AttrFsxattr
	// AttrVersion is FS_IOC_SETVERSION: Value is the new generation.
	AttrVersion
)

// FsxattrSize is sizeof(struct fsxattr).
const FsxattrSize = 28

// The ioctls of linux/fs.h that golang.org/x/sys/unix does not define.
const (
	fsIocFsgetxattr = 0x801c581f // _IOR('X', 31, struct fsxattr)
	fsIocFssetxattr = 0x401c5820 // _IOW('X', 32, struct fsxattr)
	fsIocSetversion = 0x40087602 // _IOW('v', 2, long)

	fsXflagImmutable = 0x08
	fsXflagAppend    = 0x10
)

// InodeAttrChange is one attribute ioctl, decoded.
type InodeAttrChange struct {
	Kind  InodeAttrKind
	Value uint32
	Fsx   [FsxattrSize]byte
}

// protected reports whether the change, made to the object fd refers to,
// sets or clears its immutable or append-only flag, which needs
// CAP_LINUX_IMMUTABLE (fileattr_set_prepare).
func (ch *InodeAttrChange) protected(fd int) (bool, error) {
	switch ch.Kind {
	case AttrFlags:
		old, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
		if err != nil {
			return false, err
		}
		return (old^ch.Value)&(sysx.FlagImmutable|sysx.FlagAppend) != 0, nil
	case AttrFsxattr:
		var old [FsxattrSize]byte
		if err := ioctlPtr(fd, fsIocFsgetxattr, unsafe.Pointer(&old[0])); err != nil {
			return false, err
		}
		oldX := binary.NativeEndian.Uint32(old[0:])
		newX := binary.NativeEndian.Uint32(ch.Fsx[0:])
		return (oldX^newX)&(fsXflagImmutable|fsXflagAppend) != 0, nil
	}
	return false, nil
}

// apply makes the change on the object fd refers to.
func (ch *InodeAttrChange) apply(fd int) error {
	switch ch.Kind {
	case AttrFlags:
		v := int32(ch.Value) // the kernel reads an int, whatever the request says
		return ioctlPtr(fd, unix.FS_IOC_SETFLAGS, unsafe.Pointer(&v))
	case AttrFsxattr:
		fsx := ch.Fsx
		return ioctlPtr(fd, fsIocFssetxattr, unsafe.Pointer(&fsx[0]))
	}
	v := int32(ch.Value)
	return ioctlPtr(fd, fsIocSetversion, unsafe.Pointer(&v))
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// ChangeInodeAttrs implements View: the kernel decides, with the
// caller's credentials, on the caller's own descriptor.
func (h *Host) ChangeInodeAttrs(c *Caller, at *Handle, ch InodeAttrChange) error {
	return h.as(c, func() error { return ch.apply(at.fd) })
}

// ChangeInodeAttrs implements View. The object at refers to is copied up
// first and changed there, so the change commits with the transaction
// (the staged copy replaces the original); the caller's descriptor stays
// on the original, whose attributes it still shows. An object the
// transaction cannot replace at commit — a host directory, FIFO or
// device, or a file written back in place (hard-linked, renamed, or in an
// immutable or append-only directory) — would lose the change, which is
// unsupported. (A directory the transaction made is put in place whole.)
func (v *Tx) ChangeInodeAttrs(c *Caller, at *Handle, ch InodeAttrChange) error {
	if fl, err := unix.FcntlInt(uintptr(at.fd), unix.F_GETFL, 0); err == nil && fl&unix.O_PATH != 0 {
		return unix.EBADF // ioctl on an O_PATH descriptor
	}
	return withErr(v, c, at, "", emptyPathOK,
		func(hat *Handle, _ string) error { return v.host.ChangeInodeAttrs(c, hat, ch) },
		func(t target) error {
			n := t.node
			if n == nil {
				return unix.ENOENT
			}
			if n.typ != unix.S_IFREG && n.typ != unix.S_IFDIR {
				// Special files have no attribute ioctls of their file
				// system: the device or FIFO answers.
				return unix.ENOTTY
			}
			a, err := v.attrsLocked(n)
			if err != nil {
				return err
			}
			// mnt_want_write_file: a read-only mount; an immutable object
			// may still have its flags changed.
			if err := v.roCheckFlagsLocked(n, v.hostFlagsLocked(n)&^unix.STATX_ATTR_IMMUTABLE); err != nil {
				return err
			}
			if !isOwner(c, a) {
				return unix.EPERM
			}
			vpath, err := v.pathOfLocked(t)
			if err != nil && !n.anon && (n.staged == "" || n.inPlace) {
				return err
			}
			if n.keepsIdentity() {
				return &Unsupported{What: "changing the inode attributes of the host object " + n.hostPath}
			}
			if err := v.copyUpLocked(n, vpath); err != nil {
				return err
			}
			if n.inPlace && !n.isDir() {
				return &Unsupported{What: "changing the inode attributes of " + vpath + ", which is written back in place at commit,"}
			}
			fd := at.fd
			if !n.anon {
				p, _ := v.objPath(n)
				fd, err = unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOATIME|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
			}
			prot, err := ch.protected(fd)
			if err != nil {
				return err
			}
			if prot && !c.Cred.HasCap(unix.CAP_LINUX_IMMUTABLE) {
				return unix.EPERM
			}
			// Carried by the staged copy alone: the commit must put it in
			// place even if its bytes are the original's.
			n.inodeAttrsChanged = true
			err = ch.apply(fd)
			n.attrSet = false
			if err == nil {
				v.touchCtimeLocked(n)
			}
			return err
		})
}
