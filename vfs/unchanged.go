package vfs

import (
	"bytes"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// copyMark is what a staged copy looked like right after its copy-up: the
// commit leaves out the copy-up of a file whose copy still looks so and
// still holds the original's bytes (unchangedCopyLocked).
type copyMark struct {
	size, nlink    int64
	mode, uid, gid uint32
	mtime, ctime   unix.Timespec
}

func markOf(st *unix.Stat_t) copyMark {
	return copyMark{size: st.Size, nlink: int64(st.Nlink), mode: st.Mode, uid: st.Uid, gid: st.Gid,
		mtime: st.Mtim, ctime: st.Ctim}
}

// markCopyLocked records what n's staged copy looks like once its copy-up
// is complete (data, attributes and the extra links that give it the
// view's link count).
//
// Preconditions: v.mu held; n was just copied up.
func (v *Tx) markCopyLocked(n *Node) {
	var st unix.Stat_t
	if n.typ != unix.S_IFREG || unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	m := markOf(&st)
	n.copyMark = &m
}

// unchangedCopiesLocked returns the staged paths (op.Src) of the journal's
// copy-ups of regular files that nothing changed after all: opened for
// writing and never written (a lock file, the common case), their staged
// copy has the size, attributes and ctime it had right after the copy-up,
// and the same bytes and extended attributes as the host original. Their
// write-through would only replace the original by an identical file with
// a new inode, which a process outside holding a lock on the original
// would no longer share with anyone opening it afterwards.
//
// Every write, truncate, attribute or link change moves a staged copy's
// ctime, so a moved ctime (or any other attribute) means a change and is
// decided without reading anything. The ctime alone cannot prove the
// opposite: a change within the timestamp tick of the copy-up may leave it
// as it was on file systems without fine-grained timestamps, so a copy
// whose ctime did not move is compared with the original, byte for byte
// (for lock files: nothing to read). A copy-up whose staged object later
// ops expect by inode (renamed, linked, removed afterwards) is kept: those
// ops need it in place.
//
// Preconditions: v.mu held.
func (v *Tx) unchangedCopiesLocked(journal []store.RedoOp) map[string]bool {
	var drop map[string]bool
	for i, op := range journal {
		if op.Kind != store.OpRename && op.Kind != store.OpCopyData {
			continue
		}
		n := v.copies[op.Src]
		if n == nil || n.copyMark == nil || n.staged == "" || n.area == nil || n.area.pathOf(n.staged) != op.Src ||
			(op.Kind == store.OpRename && (n.hostPath != op.Path || inoUsedElsewhere(journal, i))) {
			continue
		}
		if !v.sameAsOriginalLocked(n) {
			continue
		}
		if drop == nil {
			drop = map[string]bool{}
		}
		drop[op.Src] = true
	}
	return drop
}

// inoUsedElsewhere reports whether an op of journal other than the
// copy-up journal[copyUp] expects the inode that op places.
func inoUsedElsewhere(journal []store.RedoOp, copyUp int) bool {
	for i, op := range journal {
		if op.Ino == journal[copyUp].Ino && i != copyUp {
			return true
		}
	}
	return false
}

// sameAsOriginalLocked reports whether n's staged copy is still what its
// copy-up made: see unchangedCopiesLocked.
func (v *Tx) sameAsOriginalLocked(n *Node) bool {
	var st unix.Stat_t
	if unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || markOf(&st) != *n.copyMark {
		return false
	}
	if n.hostParent == nil || n.hostParent.hostFd < 0 {
		return false
	}
	orig, err := openHostOriginal(n.hostParent.hostFd, n.hostName,
		unix.O_RDONLY|unix.O_NOATIME|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(orig)
	var hst unix.Stat_t
	if unix.Fstat(orig, &hst) != nil || !n.isHostObject(&hst) || hst.Size != st.Size {
		return false
	}
	copy, err := unix.Openat(n.area.fd, n.staged, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(copy)
	return sameXattrs(orig, copy) && sameBytes(orig, copy)
}

// sameBytes reports whether descriptors a and b hold the same bytes.
func sameBytes(a, b int) bool {
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for off := int64(0); ; {
		na, erra := preadFull(a, ba, off)
		nb, errb := preadFull(b, bb, off)
		if erra != nil || errb != nil || na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if na < len(ba) {
			return true
		}
		off += int64(na)
	}
}

// preadFull reads from offset off until buf is full or the file ends.
func preadFull(fd int, buf []byte, off int64) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := unix.Pread(fd, buf[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if k == 0 {
			break
		}
		n += k
	}
	return n, nil
}

// sameXattrs reports whether descriptors a and b carry the same extended
// attributes with the same values.
func sameXattrs(a, b int) bool {
	xa, oka := xattrsOf(a)
	xb, okb := xattrsOf(b)
	if !oka || !okb || len(xa) != len(xb) {
		return false
	}
	for k, va := range xa {
		if vb, ok := xb[k]; !ok || !bytes.Equal(va, vb) {
			return false
		}
	}
	return true
}

func xattrsOf(fd int) (map[string][]byte, bool) {
	buf := make([]byte, 65536)
	n, err := unix.Flistxattr(fd, buf)
	if err == unix.ENOTSUP {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	out := map[string][]byte{}
	start := 0
	for i := 0; i < n; i++ {
		if buf[i] != 0 {
			continue
		}
		name := string(buf[start:i])
		start = i + 1
		val := make([]byte, 65536)
		k, err := unix.Fgetxattr(fd, name, val)
		if err != nil {
			return nil, false
		}
		out[name] = val[:k]
	}
	return out, true
}
