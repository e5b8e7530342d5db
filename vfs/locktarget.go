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
