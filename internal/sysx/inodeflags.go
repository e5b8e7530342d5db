package sysx

import "golang.org/x/sys/unix"

// The inode flags that refuse renames, links, removals and attribute
// changes even to root (chattr +i, +a): FS_IMMUTABLE_FL and FS_APPEND_FL
// of linux/fs.h, which golang.org/x/sys/unix does not define.
const (
	FlagImmutable uint32 = 0x10
	FlagAppend    uint32 = 0x20
)

// ChangeInodeFlags sets set and clears clear in the inode flags of the file
// fd refers to (FS_IOC_GETFLAGS, FS_IOC_SETFLAGS: what chattr changes),
// writing them only when that changes them, and returns the flags it
// found. A file system without inode flags answers ENOTTY, EOPNOTSUPP or
// EINVAL (see NoInodeFlags).
func ChangeInodeFlags(fd int, set, clear uint32) (uint32, error) {
	f, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return 0, err
	}
	if next := f&^clear | set; next != f {
		if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(next)); err != nil {
			return f, err
		}
	}
	return f, nil
}

// NoInodeFlags reports whether err is a file system's way of saying it
// keeps no inode flags.
func NoInodeFlags(err error) bool {
	return err == unix.ENOTTY || err == unix.EOPNOTSUPP || err == unix.EINVAL
}
