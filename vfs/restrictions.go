package vfs

import "golang.org/x/sys/unix"

// textBusyLocked fails a write to host original n while a process (of the
// tree or outside it) executes it, with ETXTBSY, as Linux's open and
// truncate do (get_write_access): the write goes to a staged copy, which
// no one executes, so the kernel would not refuse it. Until its data was
// first written in the transaction, the host original is what an exec of
// it ran. The probe is an open of the original for writing, which writes
// nothing but which watchers outside see (IN_OPEN, IN_CLOSE_WRITE): only
// a file with an execute bit, which alone can be executed, is probed.
//
// Preconditions: v.mu held.
func (v *Tx) textBusyLocked(n *Node, a attrs) error {
	if n.typ != unix.S_IFREG || n.host == (FileID{}) || n.dataChanged || n.hostParent == nil || n.hostParent.hostFd < 0 {
		return nil
	}
	if a.mode&0o111 == 0 && !(n.attrSet && n.attr.mode&0o111 != 0) {
		return nil
	}
	fd, err := unix.Openat(n.hostParent.hostFd, n.hostName, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err == unix.ETXTBSY {
		return err
	}
	if err == nil {
		unix.Close(fd)
	}
	return nil
}

// roCheckLocked fails writes to objects on read-only mounts, and to
// immutable ones (chattr +i), as inode_permission does for MAY_WRITE.
func (v *Tx) roCheckLocked(n *Node) error { return v.roCheckFlagsLocked(n, v.hostFlagsLocked(n)) }

// roCheckFlagsLocked is roCheckLocked for a caller that has n's
// hostFlagsLocked already.
func (v *Tx) roCheckFlagsLocked(n *Node, flags uint64) error {
	fd := n.hostFd
	if flags&unix.STATX_ATTR_IMMUTABLE != 0 {
		return unix.EPERM
	}
	if n.staged != "" || n.host == (FileID{}) {
		return nil
	}
	if fd < 0 && n.hostParent != nil {
		fd = n.hostParent.hostFd
	}
	var sfs unix.Statfs_t
	if fd >= 0 && unix.Fstatfs(fd, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0 {
		return unix.EROFS
	}
	return nil
}

// readOnlyMountLocked reports whether directory d of the view is on a
// read-only mount (that of its nearest host directory: one made in the
// transaction is on its parent's mount).
//
// Preconditions: v.mu held; d is a directory.
func (v *Tx) readOnlyMountLocked(d *Node) bool {
	hd := hostDirOf(d)
	var sfs unix.Statfs_t
	return hd != nil && unix.Fstatfs(hd.hostFd, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0
}

// hostFlagsLocked returns the immutable and append-only attributes
// (STATX_ATTR_IMMUTABLE, STATX_ATTR_APPEND) of n: of its host original,
// or of the object the transaction staged or made for it, which has them
// when the transaction set them (chattr through a descriptor on it; the
// commit sets them after placing it, see CommitJournal). A host directory,
// FIFO or device keeps its identity: its staged copy carries only
// attribute changes, and descriptors are on the host object.
//
// Preconditions: v.mu held.
func (v *Tx) hostFlagsLocked(n *Node) uint64 {
	if n.anon {
		return 0
	}
	var stx unix.Statx_t
	var err error
	switch {
	case n.staged != "" && !n.keepsIdentity():
		if n.area == nil || n.area.fd < 0 {
			return 0
		}
		err = unix.Statx(n.area.fd, n.staged, unix.AT_SYMLINK_NOFOLLOW, 0, &stx)
	case n.host == (FileID{}):
		return 0
	case n.hostFd >= 0:
		err = unix.Statx(n.hostFd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, 0, &stx)
	case n.hostParent != nil && n.hostParent.hostFd >= 0:
		err = unix.Statx(n.hostParent.hostFd, n.hostName, unix.AT_SYMLINK_NOFOLLOW, 0, &stx)
	default:
		return 0
	}
	if err != nil {
		return 0
	}
	return stx.Attributes & stx.Attributes_mask & (unix.STATX_ATTR_IMMUTABLE | unix.STATX_ATTR_APPEND)
}

// appendOnlyLocked checks a change of host original n against its
// append-only attribute (chattr +a). Linux allows only appending (and
// touching the times to now) and answers EPERM to everything else; what it
// allows, a transaction cannot commit — write-through replaces the file,
// which an append-only file forbids — so that is refused loudly
// (Unsupported) instead of failing after the commit point.
//
// Preconditions: v.mu held.
func (v *Tx) appendOnlyLocked(n *Node, linuxAllows bool, what string) error {
	if v.hostFlagsLocked(n)&unix.STATX_ATTR_APPEND == 0 || n.isDir() {
		return nil
	}
	if !linuxAllows {
		return unix.EPERM
	}
	if n.staged != "" && !n.inPlace {
		// Made or staged by the transaction: commit places it before it
		// sets the flag again (CommitJournal).
		return nil
	}
	return &Unsupported{What: what + " the append-only file " + n.hostPath}
}

// Unsupported is a call the transaction cannot carry out although Linux
// would: the --unsupported policy decides what the caller gets.
type Unsupported struct{ What string }

func (e *Unsupported) Error() string { return e.What + " is not supported in a transaction" }
