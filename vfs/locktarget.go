package vfs

import "golang.org/x/sys/unix"

// LockTarget is what an advisory lock through a caller's descriptor
// concerns beyond the descriptor's own object: the host original the
// object stands for in a transaction, on which the transaction takes the
// same lock (package hostlock).
type LockTarget struct {
	// Original is a read-only descriptor on the host original, owned by
	// the caller; -1 when there is none to lock: an object the
	// transaction made, one the host serves (passthrough subtrees, the
	// command's output files, objects no path reaches), a FIFO or device
	// (the descriptor is on the host object itself), or a view that is
	// the host.
	Original int
	// ID is the host original's identity and Path its host path.
	ID   FileID
	Path string
	// OnOriginal says the descriptor itself is on the host original (a
	// file the transaction has not changed, or a host directory), not on
	// a staged copy.
	OnOriginal bool
}

// LockTarget implements View: the host serves every descriptor itself.
func (h *Host) LockTarget(fd int) (LockTarget, error) { return LockTarget{Original: -1}, nil }

// LockTarget implements View: fd is a supervisor descriptor on the object
// a caller's descriptor refers to.
func (v *Tx) LockTarget(fd int) (LockTarget, error) {
	none := LockTarget{Original: -1}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return none, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nodeOfFDLocked(fd, &st)
	if n == nil || n.host == (FileID{}) || n.anon {
		return none, nil
	}
	flags := unix.O_RDONLY | unix.O_NOATIME | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	var orig int
	var err error
	switch {
	case n.typ == unix.S_IFDIR && n.hostFd >= 0:
		orig, err = openHostOriginal(n.hostFd, ".", flags|unix.O_DIRECTORY)
	case n.typ == unix.S_IFREG && n.hostParent != nil && n.hostParent.hostFd >= 0:
		var hst unix.Stat_t
		orig, err = v.openHostObject(n, n.hostParent.hostFd, n.hostName, flags|unix.O_NOFOLLOW, &hst)
	default:
		return none, nil
	}
	if err != nil {
		return none, err
	}
	return LockTarget{Original: orig, ID: n.host, Path: n.hostPath, OnOriginal: idOf(&st) == n.host}, nil
}

// LockCopy implements View: the host has no staged copies.
func (h *Host) LockCopy(fd int, copyUp bool) (int, error) { return -1, nil }

// LockCopy returns a new descriptor on the staged copy of the host
// regular file whose original fd (a supervisor descriptor on what a
// caller's descriptor refers to) is open on, with fd's access mode and
// status flags; with copyUp, it copies the file up first if the
// transaction has no copy of it yet. It returns -1 (and no error) when
// there is none to give: fd is not on an unchanged host original of a
// regular file, or the file is not to be copied for a lock (see
// lockCopyableLocked).
//
// A lock the tree takes through a descriptor on the host original cannot
// be taken there: it would conflict with the transaction's own lock on
// the original (package hostlock), which outside processes must meet
// until the transaction ends. On the staged copy the tree's locks meet
// each other, as every later open of the file in the tree reaches the
// copy too. The copy-up writes nothing: a copy whose bytes and attributes
// stay the original's is not written through (sameDataCopiesLocked), so
// the host file keeps its inode.
func (v *Tx) LockCopy(fd int, copyUp bool) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return -1, err
	}
	if fl&(unix.O_ASYNC|unix.O_DIRECT) != 0 || fl&unix.O_ACCMODE != unix.O_RDONLY {
		// Signal-driven I/O's owner (F_SETOWN) cannot be carried to a
		// new description; direct I/O may not open on the staging file
		// system; and the view opens host originals read-only only.
		return -1, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nodeOfFDLocked(fd, &st)
	if n == nil || n.anon || n.typ != unix.S_IFREG || n.host == (FileID{}) || idOf(&st) != n.host || n.keepsIdentity() {
		return -1, nil
	}
	if n.staged == "" {
		if !copyUp {
			return -1, nil
		}
		path, ok := v.lockCopyableLocked(n)
		if !ok {
			return -1, nil
		}
		if err := v.copyUpLocked(n, path); err != nil {
			if err == unix.ESTALE || err == unix.ENOENT {
				return -1, err // the host changed the file: hostChanged
			}
			// No space for the copy, say: the lock is still served,
			// on the original, as before the copy was tried.
			return -1, nil
		}
	}
	// The status flags as they are (F_GETFL shows O_NOATIME and
	// O_NOFOLLOW on host originals, docs/semantics.md §6): O_CREAT,
	// O_EXCL, O_TRUNC and O_NOCTTY are not among them.
	return unix.Openat(n.area.fd, n.staged, fl|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
}

// lockCopyableLocked says whether host original n may be copied up for a
// lock, and names it in the view: not on a read-only mount, where nothing
// is staged; not immutable or append-only, whose staged copy would not
// carry the flag that keeps later opens for writing from changing it;
// not without a name in the view; and only on a mount whose staging area
// exists or can be made (a failure to make it is not the transaction's
// doom here: the lock is still served, on the original).
//
// Preconditions: v.mu held.
func (v *Tx) lockCopyableLocked(n *Node) (string, bool) {
	if v.hostFlagsLocked(n)&(unix.STATX_ATTR_IMMUTABLE|unix.STATX_ATTR_APPEND) != 0 || v.roCheckLocked(n) != nil {
		return "", false
	}
	path, ok := v.liveNameLocked(n)
	if !ok || n.hostParent == nil {
		return "", false
	}
	hd := hostDirOf(n.hostParent)
	if hd == nil {
		return "", false
	}
	mnt := v.mountOfLocked(hd)
	if v.areas[mnt] != nil {
		return path, true
	}
	if v.areaErrs[mnt] != nil {
		return "", false
	}
	a, err := v.makeAreaLocked(hd, mnt)
	if err != nil {
		v.areaErrs[mnt] = err
		return "", false
	}
	v.areas[mnt] = a
	return path, true
}
