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

// sameDataCopiesLocked decides, for each copy-up of a regular file in
// journal, whether the commit needs to replace the host original by its
// staged copy at all. It returns, by staged path (op.Src), the op that
// stands instead of the copy-up: none (a zero op) for a copy nothing
// changed, or an in-place attribute change for a copy whose bytes and
// extended attributes are still the original's while its mode, owner or
// times are not. Replacing such a file would give it a new inode for no
// change of its contents: a lock file opened for writing (dpkg opens its
// own with O_TRUNC, which moves its times), which a process outside may
// hold open and lock, and which must stay the one object everyone locks.
//
// A copy whose size, attributes and ctime are those of right after its
// copy-up (copyMark) is unchanged as long as its bytes are the
// original's; the ctime alone cannot prove it, since a write within the
// timestamp tick of the copy-up may leave it as it was on file systems
// without fine-grained timestamps. Any other copy of the original's size
// is compared byte for byte; one of another size is a change of its data
// and is decided without reading. A copy-up whose staged object later ops
// expect by inode (renamed, linked, removed afterwards) is kept: those ops
// need it in place; so is one whose inode attributes (chattr's flags,
// fsxattr, generation) the transaction changed, which only the staged copy
// carries. A hard-linked file's copy (OpCopyData) of the original's bytes
// is dropped whatever its attributes: fullJournalLocked journals those in
// place.
//
// Preconditions: v.mu held.
func (v *Tx) sameDataCopiesLocked(journal []store.RedoOp) map[string]store.RedoOp {
	var out map[string]store.RedoOp
	for i, op := range journal {
		if op.Kind != store.OpRename && op.Kind != store.OpCopyData {
			continue
		}
		n := v.copies[op.Src]
		if n == nil || n.copyMark == nil || n.inodeAttrsChanged || n.staged == "" || n.area == nil || n.area.pathOf(n.staged) != op.Src ||
			(op.Kind == store.OpRename && (n.hostPath != op.Path || inoUsedElsewhere(journal, i))) {
			continue
		}
		st, hst, same := v.sameDataLocked(n)
		if !same {
			continue
		}
		if out == nil {
			out = map[string]store.RedoOp{}
		}
		if op.Kind == store.OpCopyData || markOf(&st) == *n.copyMark {
			out[op.Src] = store.RedoOp{}
			continue
		}
		set := store.RedoOp{Kind: store.OpSetattr, Path: op.Path, Ino: n.host.Ino,
			Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid,
			Atime: store.Timespec{Sec: st.Atim.Sec, Nsec: st.Atim.Nsec}, Mtime: store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}}
		if st.Mode != hst.Mode {
			set.Attrs |= store.AttrMode
		}
		if st.Uid != hst.Uid {
			set.Attrs |= store.AttrUID
		}
		if st.Gid != hst.Gid {
			set.Attrs |= store.AttrGID
		}
		if st.Atim != hst.Atim || st.Mtim != hst.Mtim {
			set.Attrs |= store.AttrAtime | store.AttrMtime
		}
		if set.Attrs == 0 {
			set = store.RedoOp{}
		}
		out[op.Src] = set
	}
	return out
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

// sameDataLocked reports whether n's staged copy holds the host
// original's bytes and extended attributes, with the attributes of both
// (see sameDataCopiesLocked). The answer is kept for as long as the
// staged copy's ctime does not move: the commit asks more than once.
func (v *Tx) sameDataLocked(n *Node) (st, hst unix.Stat_t, same bool) {
	if unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		int64(st.Nlink) != n.copyMark.nlink || n.hostParent == nil || n.hostParent.hostFd < 0 {
		return st, hst, false
	}
	orig, err := openHostOriginal(n.hostParent.hostFd, n.hostName,
		unix.O_RDONLY|unix.O_NOATIME|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return st, hst, false
	}
	defer unix.Close(orig)
	if unix.Fstat(orig, &hst) != nil || !n.isHostObject(&hst) || hst.Size != st.Size {
		return st, hst, false
	}
	if c := n.sameData; c != nil && c.ctime == st.Ctim && c.hostCtime == hst.Ctim {
		return st, hst, c.same
	}
	copy, err := unix.Openat(n.area.fd, n.staged, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, hst, false
	}
	defer unix.Close(copy)
	same = sameXattrs(orig, copy) && sameBytes(orig, copy)
	n.sameData = &sameData{ctime: st.Ctim, hostCtime: hst.Ctim, same: same}
	return st, hst, same
}

// sameData is sameDataLocked's answer for the staged copy and original
// with these ctimes.
type sameData struct {
	ctime, hostCtime unix.Timespec
	same             bool
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
