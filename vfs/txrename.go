package vfs

import (
	"golang.org/x/sys/unix"

	"txexec/store"
)

// Rename implements View (rename, renameat, renameat2).
func (v *Tx) Rename(c *Caller, oldAt *Handle, oldPath string, newAt *Handle, newPath string, flags uint) error {
	const known = unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT
	if flags&^known != 0 ||
		flags&unix.RENAME_EXCHANGE != 0 && flags&(unix.RENAME_NOREPLACE|unix.RENAME_WHITEOUT) != 0 {
		return unix.EINVAL
	}
	v.mu.Lock()
	ot, err := v.resolveParentLocked(c, oldAt, oldPath)
	if err != nil {
		v.mu.Unlock()
		return err
	}
	nt, err := v.resolveParentLocked(c, newAt, newPath)
	if err != nil {
		v.mu.Unlock()
		return err
	}
	if ot.pass || nt.pass {
		v.mu.Unlock()
		if ot.pass && nt.pass {
			return v.host.Rename(c, ot.hostAt, ot.hostPath, nt.hostAt, nt.hostPath, flags)
		}
		return unix.EXDEV
	}
	defer v.mu.Unlock()
	return v.renameLocked(c, ot, nt, flags)
}

func (v *Tx) renameLocked(c *Caller, ot, nt target, flags uint) error {
	src := ot.node
	// do_renameat2 compares the parents' mounts before anything else.
	op, np := ot.dir, nt.dir
	if op == nil {
		op = ot.node
	}
	if np == nil {
		np = nt.node
	}
	if op != nil && np != nil && op.isDir() && np.isDir() && v.mountOfLocked(op) != v.mountOfLocked(np) {
		return unix.EXDEV
	}
	if ot.dir == nil || nt.dir == nil {
		return unix.EBUSY
	}
	if src == nil {
		return unix.ENOENT
	}
	if err := checkName(nt.name); err != nil {
		return err
	}
	dst := nt.node
	exchange := flags&unix.RENAME_EXCHANGE != 0
	if exchange && dst == nil {
		return unix.ENOENT
	}
	if flags&unix.RENAME_NOREPLACE != 0 && dst != nil {
		return unix.EEXIST
	}
	if (ot.slash || nt.slash) && !src.isDir() {
		return unix.ENOTDIR
	}
	// A directory cannot move below itself.
	if src.isDir() {
		for d := nt.dir; d != nil; d = d.parent {
			if d == src {
				return unix.EINVAL
			}
		}
	}
	if exchange && dst.isDir() {
		for d := ot.dir; d != nil; d = d.parent {
			if d == dst {
				return unix.EINVAL
			}
		}
	}
	if dst == src {
		return nil // two names of one object: nothing to do (rename(2))
	}
	// vfs_rename: may_delete of the source, then of a target, which must
	// be of the source's type unless the two are exchanged — the types
	// only after the permissions (mayDelete).
	if err := v.mayDeleteLocked(c, ot.dir, src, src.isDir()); err != nil {
		return err
	}
	if dst != nil {
		isDir := src.isDir()
		if exchange {
			isDir = dst.isDir()
		}
		if err := v.mayDeleteLocked(c, nt.dir, dst, isDir); err != nil {
			return err
		}
	} else if err := v.mayCreateLocked(c, nt.dir, nt.name); err != nil {
		return err
	}
	// Moving a directory to another parent rewrites its "..".
	if src.isDir() && ot.dir != nt.dir {
		a, err := v.attrsLocked(src)
		if err != nil {
			return err
		}
		if err := permission(c, a, mayWrite); err != nil {
			return err
		}
	}
	if exchange && dst.isDir() && ot.dir != nt.dir {
		a, err := v.attrsLocked(dst)
		if err != nil {
			return err
		}
		if err := permission(c, a, mayWrite); err != nil {
			return err
		}
	}
	if dst != nil && dst.isDir() && !exchange {
		if err := v.removableDirLocked(c, dst, nt.dir); err != nil {
			return err
		}
	}
	whiteout := flags&unix.RENAME_WHITEOUT != 0
	if whiteout && !v.whiteoutsLocked(ot.dir) {
		return unix.EINVAL
	}
	oldVPath := childPath(ot.dir.viewPathLocked(), ot.name)
	newVPath := childPath(nt.dir.viewPathLocked(), nt.name)
	if exchange {
		v.setEntryLocked(ot.dir, ot.name, dst)
		v.setEntryLocked(nt.dir, nt.name, src)
		v.movedLocked(dst, ot.dir, ot.name, nt.dir)
		v.movedLocked(src, nt.dir, nt.name, ot.dir)
		v.journalLocked(store.RedoOp{Kind: store.OpExchange, Src: oldVPath, Path: newVPath, Ino: src.replayIno, Ino2: dst.replayIno})
		return nil
	}
	if dst != nil {
		if dst.isDir() {
			v.detachDirLocked(dst, nt.dir)
		} else {
			v.linkCountLocked(dst, -1)
		}
	}
	v.setEntryLocked(ot.dir, ot.name, nil)
	v.setEntryLocked(nt.dir, nt.name, src)
	v.movedLocked(src, nt.dir, nt.name, ot.dir)
	v.journalLocked(store.RedoOp{Kind: store.OpRename, Src: oldVPath, Path: newVPath, Ino: src.replayIno})
	if dst != nil {
		v.buryLocked(dst, newVPath)
	}
	if whiteout {
		// The whiteout the file system leaves at the old name: a
		// character device 0:0 of mode 0, owned as any new object.
		_, err := v.createLocked(c, ot.dir, ot.name, unix.S_IFCHR, func(at int, sname string, perm uint32) error {
			return unix.Mknodat(at, sname, unix.S_IFCHR, 0)
		})
		return err
	}
	return nil
}

// whiteoutsLocked reports whether the file system dir is on supports
// RENAME_WHITEOUT (the kernel lets each file system refuse it, EINVAL).
//
// Preconditions: v.mu held.
func (v *Tx) whiteoutsLocked(dir *Node) bool {
	for d := dir; d != nil; d = d.parent {
		if d.hostFd < 0 {
			continue
		}
		var sfs unix.Statfs_t
		if unix.Fstatfs(d.hostFd, &sfs) != nil {
			return false
		}
		switch uint32(sfs.Type) {
		case unix.EXT4_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC:
			return true
		}
		return false
	}
	return false
}

// movedLocked records that n is now name in dir, having been in from.
func (v *Tx) movedLocked(n, dir *Node, name string, from *Node) {
	v.touchCtimeLocked(n)
	if n.isDir() {
		n.parent, n.name = dir, name
		if dir != from {
			v.linkCountLocked(from, -1)
			v.linkCountLocked(dir, +1)
		}
		return
	}
	n.locDir, n.locName = dir, name
	n.addNameLocked(dir, name)
}
