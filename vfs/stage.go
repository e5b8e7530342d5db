package vfs

import (
	"strconv"

	"golang.org/x/sys/unix"

	"txexec/fastlookup"
	"txexec/proc"
	"txexec/store"
)

// rootCred is the supervisor's own identity, for walks it makes for itself.
var rootCred = &proc.Cred{CapEff: ^uint64(0)}

// journalLocked appends a redo operation. Paths are view paths at this point
// of the transaction, which are host paths at this point of the replay.
func (v *Tx) journalLocked(op store.RedoOp) {
	v.journal = append(v.journal, op)
	v.gen++
}

// registerStagedLocked records n's new staged object, name in area a.
func (v *Tx) registerStagedLocked(n *Node, a *area, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(a.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	v.registerStagedAsLocked(n, a, name, &st)
	return nil
}

// registerStagedAsLocked is registerStagedLocked for an object whose
// attributes st the caller has read.
func (v *Tx) registerStagedAsLocked(n *Node, a *area, name string, st *unix.Stat_t) {
	// A staged directory carries changed attributes, its mode and owner
	// among them, which decide the searches under it.
	v.fastNodeLocked(n, fastlookup.ChangedSubtree)
	v.fastNotNativeLocked(n) // an object it had before
	n.staged, n.stagedID, n.area = name, idOf(st), a
	v.nodes[n.stagedID] = n
	v.fastOwnObjectLocked(n.stagedID)
	v.fastNativeLocked(n)
	v.gen++
}

// copyUpLocked gives host original n a staged copy, on its first
// modification, in the staging area of its mount: data by reflink
// (FICLONE) where the file system has it, else copy_file_range; then
// owner, mode, extended attributes and times.
// A file that keeps the host original's identity (inPlace) is written back
// into it at commit; any other is replaced by its copy, so the journal gets
// the rename that places the copy here, at this point of the replay.
//
// Preconditions: v.mu held; path is a view path of n.
func (v *Tx) copyUpLocked(n *Node, path string) error {
	if n.staged != "" || n.anon {
		return nil
	}
	var st unix.Stat_t
	if n.hostFd >= 0 {
		if err := unix.Fstat(n.hostFd, &st); err != nil {
			return v.hostChanged(n.hostPath, err)
		}
	} else if err := unix.Fstatat(n.hostParent.hostFd, n.hostName, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || !n.isHostObject(&st) {
		return v.hostChanged(n.hostPath, unix.ESTALE)
	}
	// The copy replaces the original at commit, contents and attributes:
	// a change of either meanwhile would be lost.
	v.recordReadLocked(n, &st, readData|readMeta)
	if !n.isDir() && !n.inPlace && n.hostParent != nil &&
		v.hostFlagsLocked(n.hostParent)&(unix.STATX_ATTR_IMMUTABLE|unix.STATX_ATTR_APPEND) != 0 {
		// Its directory forbids replacing it (chattr +i or +a), as
		// write-through by rename would: it is written back in place,
		// like a hard-linked file.
		n.inPlace = true
	}
	dir := n.hostParent
	if n.isDir() {
		dir = n
	}
	a, err := v.areaForLocked(dir, path)
	if err != nil {
		return err
	}
	if !n.nlinkSet {
		// The staged copy has one link; the view keeps the original's.
		n.nlink, n.nlinkSet = st.Nlink, true
	}
	name := v.newStagedNameLocked()
	if err := v.copyObjectLocked(n, &st, a.fd, name); err != nil {
		unix.Unlinkat(a.fd, name, 0)
		return err
	}
	if err := v.registerStagedLocked(n, a, name); err != nil {
		return err
	}
	v.stagedLinksLocked(n)
	v.markCopyLocked(n)
	n.attrSet = false
	switch {
	case n.isDir():
		// A directory keeps its identity; its attribute changes are
		// journaled as setattr (inPlace).
	case n.keepsIdentity():
		// A FIFO or device holds no data and stays itself (see
		// openSpecialLocked): only attribute changes reach the host, in
		// place.
		n.inPlace = true
	case n.inPlace && n.typ == unix.S_IFREG:
		v.noteCopyLocked(n, a.pathOf(name))
		v.journalOnLocked(n, store.RedoOp{Kind: store.OpCopyData, Src: a.pathOf(name), Path: path, Ino: n.replayIno})
	case n.inPlace:
		// A hard-linked symlink or device: only its attributes can
		// change, journaled as setattr.
	default:
		v.noteCopyLocked(n, a.pathOf(name))
		v.journalOnLocked(n, store.RedoOp{Kind: store.OpRename, Src: a.pathOf(name), Path: path, Ino: n.stagedID.Ino})
		n.replayIno = n.stagedID.Ino
	}
	return nil
}

// noteCopyLocked notes that the journal op with Src staged carries the
// copy-up of host original n (Tx.copies).
func (v *Tx) noteCopyLocked(n *Node, staged string) {
	if v.copies == nil {
		v.copies = map[string]*Node{}
	}
	v.copies[staged] = n
}

// copyObjectLocked makes name in the staging area at at a copy of host
// original n (whose attributes are st).
func (v *Tx) copyObjectLocked(n *Node, st *unix.Stat_t, at int, name string) error {
	perm := st.Mode & 0o7777
	switch n.typ {
	case unix.S_IFREG:
		src, err := v.openBackingLocked(n, unix.O_RDONLY|unix.O_NOATIME)
		if err != nil {
			return err
		}
		defer unix.Close(src)
		dst, err := unix.Openat(at, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		defer unix.Close(dst)
		if err := copyData(dst, src, st.Size); err != nil {
			return err
		}
		copyXattrs(src, dst)
		if err := unix.Fchown(dst, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
		if err := unix.Fchmod(dst, perm); err != nil {
			return err
		}
		return unix.UtimesNanoAt(at, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
	case unix.S_IFDIR:
		if err := unix.Mkdirat(at, name, 0o700); err != nil {
			return err
		}
		if src, err := v.openBackingLocked(n, unix.O_RDONLY|unix.O_DIRECTORY); err == nil {
			if dst, err := unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
				copyXattrs(src, dst)
				unix.Close(dst)
			}
			unix.Close(src)
		}
	case unix.S_IFLNK:
		target, err := v.readlinkLocked(n)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(target, at, name); err != nil {
			return err
		}
	default:
		if err := unix.Mknodat(at, name, n.typ|0o600, int(st.Rdev)); err != nil {
			return err
		}
	}
	if err := unix.Fchownat(at, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if n.typ != unix.S_IFLNK {
		if err := unix.Fchmodat(at, name, perm, 0); err != nil {
			return err
		}
	}
	return unix.UtimesNanoAt(at, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
}

// copyData copies size bytes from src to dst: one FICLONE where the file
// system shares extents (O(1) for any size), else copy_file_range of each
// data segment (SEEK_DATA/SEEK_HOLE), so holes stay holes — a sparse file
// does not grow on disk when it is copied up.
func copyData(dst, src int, size int64) error {
	if size == 0 {
		return nil
	}
	if err := unix.IoctlFileClone(dst, src); err == nil {
		return nil
	}
	if err := unix.Ftruncate(dst, size); err != nil {
		return err
	}
	for off := int64(0); off < size; {
		data, err := unix.Seek(src, off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			return nil // a hole up to the end
		}
		if err != nil {
			// No SEEK_DATA here: the whole rest is data.
			data = off
		}
		end, err := unix.Seek(src, data, unix.SEEK_HOLE)
		if err != nil || end > size {
			end = size
		}
		if err := copyRange(dst, src, data, end); err != nil {
			return err
		}
		off = end
	}
	return nil
}

// copyRange copies bytes [from, to) of src to the same offsets of dst.
func copyRange(dst, src int, from, to int64) error {
	roff, woff := from, from
	for roff < to {
		n, err := unix.CopyFileRange(src, &roff, dst, &woff, int(min(to-roff, 1<<30)), 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // the file shrank under us; validation will see it
		}
	}
	return nil
}

// copyXattrs copies every extended attribute it can read (security.*
// included: file capabilities must survive a copy-up).
func copyXattrs(src, dst int) {
	buf := make([]byte, 65536)
	n, err := unix.Flistxattr(src, buf)
	if err != nil || n <= 0 {
		return
	}
	val := make([]byte, 65536)
	start := 0
	for i := 0; i < n; i++ {
		if buf[i] != 0 {
			continue
		}
		name := string(buf[start:i])
		start = i + 1
		k, err := unix.Fgetxattr(src, name, val)
		if err != nil {
			continue
		}
		unix.Fsetxattr(dst, name, val[:k], 0)
	}
}

// createLocked makes a new staged object of type typ, in the staging area
// of dir's mount, and attaches it as name in dir. mode is the requested
// one, before the caller's umask (newOwner applies it). mk creates the
// object at the staging name, relative to the area's descriptor at.
//
// Preconditions: v.mu held; permission to create in dir was checked.
func (v *Tx) createLocked(c *Caller, dir *Node, name string, mode uint32, mk func(at int, stagingName string, perm uint32) error) (*Node, error) {
	da, err := v.attrsLocked(dir)
	if err != nil {
		return nil, err
	}
	path := childPath(dir.viewPathLocked(), name)
	a, err := v.areaForLocked(dir, path)
	if err != nil {
		return nil, err
	}
	uid, gid, mode := newOwner(c, da, mode)
	sname := v.newStagedNameLocked()
	if err := mk(a.fd, sname, mode&0o7777); err != nil {
		return nil, err
	}
	typ := mode & unix.S_IFMT
	// The object is the supervisor's, made with its umask of 0: owner and
	// mode are set only where they differ, which for a root caller and
	// plain permission bits is nowhere (two system calls per create).
	var st unix.Stat_t
	if err := unix.Fstatat(a.fd, sname, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		unix.Unlinkat(a.fd, sname, 0)
		return nil, err
	}
	chowned := st.Uid != uid || st.Gid != gid
	if chowned {
		if err := unix.Fchownat(a.fd, sname, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Unlinkat(a.fd, sname, 0)
			return nil, err
		}
	}
	if typ != unix.S_IFLNK && (chowned || st.Mode&0o7777 != mode&0o7777) {
		// After chown (which clears set-ID bits), and exactly: mkdir and
		// mknod ignore some bits.
		if err := unix.Fchmodat(a.fd, sname, mode&0o7777, 0); err != nil {
			return nil, err
		}
	}
	n := &Node{typ: typ, hostFd: -1}
	// Owner and mode changes keep the object's identity.
	v.registerStagedAsLocked(n, a, sname, &st)
	n.replayIno = n.stagedID.Ino
	if typ == unix.S_IFDIR {
		n.opaque, n.entries, n.inPlace = true, map[string]*Node{}, true
		n.parent, n.name = dir, name
		v.linkCountLocked(dir, +1)
	} else {
		n.locDir, n.locName = dir, name
	}
	v.setEntryLocked(dir, name, n)
	n.addNameLocked(dir, name)
	v.journalLocked(store.RedoOp{Kind: store.OpRename, Src: a.pathOf(sname), Path: path, Ino: n.stagedID.Ino})
	return n, nil
}

// setEntryLocked makes name in dir refer to n (nil removes it).
func (v *Tx) setEntryLocked(dir *Node, name string, n *Node) {
	v.fastEntryLocked(dir, name)
	v.gen++
	if dir.entries == nil {
		dir.entries = map[string]*Node{}
	}
	if n == nil && dir.opaque {
		delete(dir.entries, name)
	} else {
		dir.entries[name] = n
	}
	v.touchDirLocked(dir)
	v.noteEntryLocked(dir, name)
}

// linkCountLocked adjusts n's link count in the view.
func (v *Tx) linkCountLocked(n *Node, delta int) {
	v.fastNotNativeLocked(n)
	if !n.nlinkSet {
		st, err := v.statLocked(n)
		if err != nil {
			return
		}
		n.nlink, n.nlinkSet = st.Nlink, true
	}
	n.nlink = uint64(int64(n.nlink) + int64(delta))
	v.stagedLinksLocked(n)
	v.touchCtimeLocked(n)
}

// stagedLinksLocked keeps a staged non-directory's own link count equal to
// its link count in the view, with extra names beside it in its staging
// area, so that fstat of a descriptor on it agrees with stat of its path.
// (With no name left in the view it keeps its staged name, which the
// journal's ops refer to.) The extra names go with the staging area.
//
// Preconditions: v.mu held.
func (v *Tx) stagedLinksLocked(n *Node) {
	if n.staged == "" || n.isDir() || n.anon || !n.nlinkSet {
		return
	}
	want := max(int(n.nlink), 1) - 1
	for n.extraLinks < want {
		name := n.staged + "." + strconv.Itoa(n.extraLinks+1)
		if unix.Linkat(n.area.fd, n.staged, n.area.fd, name, 0) != nil {
			return
		}
		n.extraLinks++
	}
	for n.extraLinks > want {
		unix.Unlinkat(n.area.fd, n.staged+"."+strconv.Itoa(n.extraLinks), 0)
		n.extraLinks--
	}
}

// setattrLocked journals an attribute change of an object that keeps its
// identity at commit (directories, multiply-linked files); others carry
// their attributes in their staged copy.
func (v *Tx) setattrLocked(n *Node, path string, mask store.AttrMask) error {
	if !n.inPlace || n.staged == "" {
		// Not copied up: the call changed nothing (chown to -1, -1).
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	v.journalOnLocked(n, store.RedoOp{Kind: store.OpSetattr, Path: path, Ino: n.replayIno,
		Attrs: mask,
		Mode:  st.Mode & 0o7777, UID: st.Uid, GID: st.Gid,
		Atime: store.Timespec{Sec: st.Atim.Sec, Nsec: st.Atim.Nsec}, Mtime: store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}})
	return nil
}
