package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// ioctl runs in the kernel (passthrough) except for the requests below,
// which the filter tells apart by number: terminal and other ioctls cost
// no round trip. They are the requests that change an inode or a whole
// file system or device without write access to what the descriptor is
// open on — which a transaction must carry out itself, or refuse.
//
// Requests are matched exactly where txexec serves them; requests it
// only refuses are matched by type and number, ignoring direction and
// size, so that a variant with another argument size (a newer struct)
// is refused too.

// ioctlRequest matches ioctl's request (argument 1) exactly.
func ioctlRequest(req uint32) interpose.ArgCond { return argIs(1, req) }

// ioctlTypeNr matches ioctl requests of type typ and number nr, whatever
// their direction and argument size.
func ioctlTypeNr(typ, nr uint32) interpose.ArgCond {
	return interpose.ArgCond{Arg: 1, Mask: 0xffff, Value: uint64(typ<<8 | nr)}
}

// Requests golang.org/x/sys/unix does not define (linux/fs.h,
// linux/fiemap.h, linux/blkzoned.h, ext4, xfs and btrfs headers).
const (
	fsIoc32Setflags   = 0x40046602 // _IOW('f', 2, int)
	fsIocFssetxattr   = 0x401c5820 // _IOW('X', 32, struct fsxattr)
	fsIocSetversion   = 0x40087602 // _IOW('v', 2, long)
	fsIoc32Setversion = 0x40047602 // _IOW('v', 2, int)
	// ext4's own name for setting the generation, which it serves beside
	// FS_IOC_SETVERSION (its 32-bit variant only for 32-bit callers).
	ext4IocSetversion = 0x40086604 // _IOW('f', 4, long)
)

// Types of ioctl numbers ('f' is ext2/3/4 and linux/fs.h's, 'X' xfs and
// the generic FI* ones, 0x94 btrfs and FICLONE's, 0x12 block devices,
// 'L' loop devices, 'N' NVMe's passthrough).
const (
	iocTypeF     = 'f'
	iocTypeX     = 'X'
	iocTypeBtrfs = 0x94
	iocTypeBlk   = 0x12
	iocTypeLoop  = 'L'
	iocTypeNvme  = 'N'
)

// sgIO is SG_IO (scsi/sg.h): a SCSI command, such as WRITE, sent to a disk
// through its block device or /dev/sg*; Linux lets CAP_SYS_RAWIO send
// any command through a read-only descriptor.
const sgIO = 0x2285

const (
	attrIoctlNote = "performed by txexec on the transaction's copy of the object (copied up first), with the caller's ownership and CAP_LINUX_IMMUTABLE checked, so it commits with the transaction; a descriptor the process already has on the host original still shows the original's attributes. On a host directory, FIFO or device, or a host file written back in place at commit (hard-linked, renamed, or in an immutable or append-only directory), it follows --unsupported"
	cloneFileNote = "needs a descriptor open for writing as its destination, and in a transaction only staged copies are (or what the transaction writes through anyway: its output, --exclude)"
	extentsNote   = "moves or exchanges extents between files, or swaps inodes, below the view"
	fsWideNote    = "changes a whole file system of the host, outside the transaction"
	blockNote     = "writes to, or repartitions, a block device, below every file system: a transaction cannot roll it back"
	passthruNote  = "sends the disk a command of the caller's (a write among them, through a read-only descriptor for root), below every file system: a transaction cannot roll it back"
	loopNote      = "attaches or configures a loop device, which outlives the transaction"
	handleNote    = "reaches a file by its handle, around the view (as open_by_handle_at, which is refused)"
	cryptNote     = "fs-verity and encryption policies and keys change inodes and the file system's keyring for good, and are not staged"
)

// ioctlCases are ioctl's argument cases (entries.go).
func ioctlCases() []Case {
	serve := func(name string, req uint32) Case {
		return Case{Name: name, When: ioctlRequest(req), Support: Partial, Handler: IoctlInodeAttrs, Note: attrIoctlNote}
	}
	policy := func(name string, when interpose.ArgCond, note string) Case {
		return Case{Name: name, When: when, Support: NoTxMeaning, Handler: unsupportedCall, Note: note}
	}
	free := func(name string, req uint32, note string) Case {
		return Case{Name: name, When: ioctlRequest(req), Support: Passthrough, Note: note}
	}
	return []Case{
		serve("FS_IOC_SETFLAGS", unix.FS_IOC_SETFLAGS),
		serve("FS_IOC32_SETFLAGS", fsIoc32Setflags),
		serve("FS_IOC_FSSETXATTR", fsIocFssetxattr),
		serve("FS_IOC_SETVERSION", fsIocSetversion),
		serve("FS_IOC32_SETVERSION", fsIoc32Setversion),
		serve("EXT4_IOC_SETVERSION", ext4IocSetversion),

		free("FICLONE", unix.FICLONE, cloneFileNote),
		free("FICLONERANGE", unix.FICLONERANGE, cloneFileNote),
		policy("FIDEDUPERANGE", ioctlTypeNr(iocTypeBtrfs, 54),
			"its destinations are descriptors in memory, which Linux lets be read-only for their owner: a host original's extents would change below the view"),

		policy("FS_IOC_ENABLE_VERITY", ioctlTypeNr(iocTypeF, 133), cryptNote),
		policy("FS_IOC_SET_ENCRYPTION_POLICY", ioctlTypeNr(iocTypeF, 19), cryptNote),
		policy("FS_IOC_ADD_ENCRYPTION_KEY", ioctlTypeNr(iocTypeF, 23), cryptNote),
		policy("FS_IOC_REMOVE_ENCRYPTION_KEY", ioctlTypeNr(iocTypeF, 24), cryptNote),
		policy("FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS", ioctlTypeNr(iocTypeF, 25), cryptNote),
		policy("FS_IOC_SETFSLABEL", ioctlTypeNr(iocTypeBtrfs, 50), fsWideNote),
		policy("FITRIM", ioctlTypeNr(iocTypeX, 121), fsWideNote),
		policy("FIFREEZE", ioctlTypeNr(iocTypeX, 119), fsWideNote),
		policy("FITHAW", ioctlTypeNr(iocTypeX, 120), fsWideNote),
		policy("FS_IOC_SHUTDOWN", ioctlTypeNr(iocTypeX, 125), fsWideNote),

		policy("EXT4_IOC_MOVE_EXT", ioctlTypeNr(iocTypeF, 15), extentsNote),
		policy("EXT4_IOC_SWAP_BOOT", ioctlTypeNr(iocTypeF, 17), extentsNote),
		policy("EXT4_IOC_MIGRATE", ioctlTypeNr(iocTypeF, 9), "converts a file's block map to extents below the view, through any descriptor its owner has"),
		policy("EXT4_IOC_GROUP_EXTEND", ioctlTypeNr(iocTypeF, 7), fsWideNote),
		policy("EXT4_IOC_GROUP_ADD", ioctlTypeNr(iocTypeF, 8), fsWideNote),
		policy("EXT4_IOC_RESIZE_FS", ioctlTypeNr(iocTypeF, 16), fsWideNote),
		policy("EXT4_IOC_CHECKPOINT", ioctlTypeNr(iocTypeF, 43), fsWideNote),
		policy("EXT4_IOC_SETFSUUID", ioctlTypeNr(iocTypeF, 44), fsWideNote),
		policy("XFS_IOC_SWAPEXT", ioctlTypeNr(iocTypeX, 109), extentsNote),
		policy("XFS_IOC_EXCHANGE_RANGE", ioctlTypeNr(iocTypeX, 129), extentsNote),
		policy("XFS_IOC_FSGROWFSDATA", ioctlTypeNr(iocTypeX, 110), fsWideNote),
		policy("XFS_IOC_FSGROWFSLOG", ioctlTypeNr(iocTypeX, 111), fsWideNote),
		policy("XFS_IOC_FSGROWFSRT", ioctlTypeNr(iocTypeX, 112), fsWideNote),
		policy("XFS_IOC_OPEN_BY_HANDLE", ioctlTypeNr(iocTypeX, 107), handleNote),
		policy("XFS_IOC_READLINK_BY_HANDLE", ioctlTypeNr(iocTypeX, 108), handleNote),
		policy("XFS_IOC_FSSETDM_BY_HANDLE", ioctlTypeNr(iocTypeX, 118), handleNote),
		policy("XFS_IOC_ATTRLIST_BY_HANDLE", ioctlTypeNr(iocTypeX, 122), handleNote),
		policy("XFS_IOC_ATTRMULTI_BY_HANDLE", ioctlTypeNr(iocTypeX, 123), handleNote),
		policy("BTRFS_IOC_QUOTA_CTL", ioctlTypeNr(iocTypeBtrfs, 40), fsWideNote),
		policy("BTRFS_IOC_QGROUP_ASSIGN", ioctlTypeNr(iocTypeBtrfs, 41), fsWideNote),
		policy("BTRFS_IOC_QGROUP_CREATE", ioctlTypeNr(iocTypeBtrfs, 42), fsWideNote),
		policy("BTRFS_IOC_QGROUP_LIMIT", ioctlTypeNr(iocTypeBtrfs, 43), fsWideNote),
		policy("BTRFS_IOC_QUOTA_RESCAN", ioctlTypeNr(iocTypeBtrfs, 44), fsWideNote),

		policy("BTRFS_IOC_SNAP_CREATE", ioctlTypeNr(iocTypeBtrfs, 1), "btrfs subvolumes and snapshots are made by the kernel below the view"),
		policy("BTRFS_IOC_DEFRAG", ioctlTypeNr(iocTypeBtrfs, 2), extentsNote),
		policy("BTRFS_IOC_RESIZE", ioctlTypeNr(iocTypeBtrfs, 3), fsWideNote),
		policy("BTRFS_IOC_ADD_DEV", ioctlTypeNr(iocTypeBtrfs, 10), fsWideNote),
		policy("BTRFS_IOC_RM_DEV", ioctlTypeNr(iocTypeBtrfs, 11), fsWideNote),
		policy("BTRFS_IOC_SUBVOL_CREATE", ioctlTypeNr(iocTypeBtrfs, 14), "btrfs subvolumes and snapshots are made by the kernel below the view"),
		policy("BTRFS_IOC_SNAP_DESTROY", ioctlTypeNr(iocTypeBtrfs, 15), "btrfs subvolumes are removed by the kernel below the view"),
		policy("BTRFS_IOC_DEFRAG_RANGE", ioctlTypeNr(iocTypeBtrfs, 16), extentsNote),
		policy("BTRFS_IOC_DEFAULT_SUBVOL", ioctlTypeNr(iocTypeBtrfs, 19), fsWideNote),
		policy("BTRFS_IOC_SNAP_CREATE_V2", ioctlTypeNr(iocTypeBtrfs, 23), "btrfs subvolumes and snapshots are made by the kernel below the view"),
		policy("BTRFS_IOC_SUBVOL_CREATE_V2", ioctlTypeNr(iocTypeBtrfs, 24), "btrfs subvolumes and snapshots are made by the kernel below the view"),
		policy("BTRFS_IOC_SUBVOL_SETFLAGS", ioctlTypeNr(iocTypeBtrfs, 26), "makes a btrfs subvolume read-only or writable below the view"),
		policy("BTRFS_IOC_BALANCE_V2", ioctlTypeNr(iocTypeBtrfs, 32), fsWideNote),
		policy("BTRFS_IOC_BALANCE_CTL", ioctlTypeNr(iocTypeBtrfs, 33), fsWideNote),
		policy("BTRFS_IOC_SET_RECEIVED_SUBVOL", ioctlTypeNr(iocTypeBtrfs, 37), "changes a btrfs subvolume's identity below the view"),
		policy("BTRFS_IOC_DEV_REPLACE", ioctlTypeNr(iocTypeBtrfs, 53), fsWideNote),
		policy("BTRFS_IOC_SET_FEATURES", ioctlTypeNr(iocTypeBtrfs, 57), fsWideNote),
		policy("BTRFS_IOC_RM_DEV_V2", ioctlTypeNr(iocTypeBtrfs, 58), fsWideNote),
		policy("BTRFS_IOC_SNAP_DESTROY_V2", ioctlTypeNr(iocTypeBtrfs, 63), "btrfs subvolumes are removed by the kernel below the view"),

		policy("BLKROSET", ioctlTypeNr(iocTypeBlk, 93), blockNote),
		policy("BLKRRPART", ioctlTypeNr(iocTypeBlk, 95), blockNote),
		policy("BLKPG", ioctlTypeNr(iocTypeBlk, 105), blockNote),
		policy("BLKBSZSET", ioctlTypeNr(iocTypeBlk, 113), blockNote),
		policy("BLKDISCARD", ioctlTypeNr(iocTypeBlk, 119), blockNote),
		policy("BLKSECDISCARD", ioctlTypeNr(iocTypeBlk, 125), blockNote),
		policy("BLKZEROOUT", ioctlTypeNr(iocTypeBlk, 127), blockNote),
		policy("BLKRESETZONE", ioctlTypeNr(iocTypeBlk, 131), blockNote),
		policy("BLKOPENZONE", ioctlTypeNr(iocTypeBlk, 134), blockNote),
		policy("BLKCLOSEZONE", ioctlTypeNr(iocTypeBlk, 135), blockNote),
		policy("BLKFINISHZONE", ioctlTypeNr(iocTypeBlk, 136), blockNote),
		policy("SG_IO", ioctlRequest(sgIO), passthruNote),
		policy("NVME_IOCTL_ADMIN_CMD", ioctlTypeNr(iocTypeNvme, 0x41), passthruNote),
		policy("NVME_IOCTL_SUBMIT_IO", ioctlTypeNr(iocTypeNvme, 0x42), passthruNote),
		policy("NVME_IOCTL_IO_CMD", ioctlTypeNr(iocTypeNvme, 0x43), passthruNote),
		policy("NVME_IOCTL_ADMIN64_CMD", ioctlTypeNr(iocTypeNvme, 0x47), passthruNote),
		policy("NVME_IOCTL_IO64_CMD", ioctlTypeNr(iocTypeNvme, 0x48), passthruNote),
		policy("NVME_IOCTL_IO64_CMD_VEC", ioctlTypeNr(iocTypeNvme, 0x49), passthruNote),

		policy("LOOP_SET_FD", ioctlRequest(unix.LOOP_SET_FD), loopNote),
		policy("LOOP_CLR_FD", ioctlRequest(unix.LOOP_CLR_FD), loopNote),
		policy("LOOP_SET_STATUS", ioctlRequest(unix.LOOP_SET_STATUS), loopNote),
		policy("LOOP_SET_STATUS64", ioctlRequest(unix.LOOP_SET_STATUS64), loopNote),
		policy("LOOP_CHANGE_FD", ioctlRequest(0x4c06), loopNote),
		policy("LOOP_SET_CAPACITY", ioctlRequest(unix.LOOP_SET_CAPACITY), loopNote),
		policy("LOOP_SET_DIRECT_IO", ioctlRequest(unix.LOOP_SET_DIRECT_IO), loopNote),
		policy("LOOP_SET_BLOCK_SIZE", ioctlRequest(unix.LOOP_SET_BLOCK_SIZE), loopNote),
		policy("LOOP_CONFIGURE", ioctlRequest(unix.LOOP_CONFIGURE), loopNote),
		policy("LOOP_CTL_ADD", ioctlRequest(unix.LOOP_CTL_ADD), loopNote),
		policy("LOOP_CTL_REMOVE", ioctlRequest(unix.LOOP_CTL_REMOVE), loopNote),
		policy("LOOP_CTL_GET_FREE", ioctlRequest(unix.LOOP_CTL_GET_FREE), loopNote),
	}
}

// IoctlInodeAttrs implements the ioctls that change an inode's attributes
// through any descriptor of it: FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR,
// FS_IOC_SETVERSION (and their 32-bit variants, and ext4's
// EXT4_IOC_SETVERSION). Outside a transaction
// the kernel runs them, decided on the request number alone.
func IoctlInodeAttrs(k *Kernel, c *interpose.Call) interpose.Reply {
	if !k.inTransaction() {
		return interpose.Continue()
	}
	fd := c.Args[0].Int()
	argp := c.Args[2].Pointer()
	var ch vfs.InodeAttrChange
	switch c.Args[1].Uint() {
	case unix.FS_IOC_SETFLAGS, fsIoc32Setflags:
		ch.Kind = vfs.AttrFlags
	case fsIocSetversion, fsIoc32Setversion, ext4IocSetversion:
		ch.Kind = vfs.AttrVersion
	case fsIocFssetxattr:
		ch.Kind = vfs.AttrFsxattr
	default:
		return interpose.Fail(unix.ENOTTY)
	}
	if fd < 0 {
		return interpose.Fail(unix.EBADF)
	}
	if ch.Kind == vfs.AttrFsxattr {
		if err := c.Read(argp, ch.Fsx[:]); err != nil {
			return k.reply(c, 0, err)
		}
	} else {
		// Both variants of each request read an int (get_user).
		var b [4]byte
		if err := c.Read(argp, b[:]); err != nil {
			return k.reply(c, 0, err)
		}
		ch.Value = binary.NativeEndian.Uint32(b[:])
	}
	return k.fdCall(c, fd, func(cl *vfs.Caller, h *vfs.Handle) (int64, error) {
		return 0, k.View.ChangeInodeAttrs(cl, h, ch)
	})
}
