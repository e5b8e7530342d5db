package vfs

import (
	"strconv"
	"sync"
	"txexec/store"

	"golang.org/x/sys/unix"
)

// mayCreateLocked checks creating name in dir (Linux's may_create).
func (v *Tx) mayCreateLocked(c *Caller, dir *Node, name string) error {
	if dir.removed {
		return unix.ENOENT
	}
	if err := checkName(name); err != nil {
		return err
	}
	da, err := v.attrsLocked(dir)
	if err != nil {
		return err
	}
	// inode_permission refuses a read-only mount and an immutable
	// directory before it looks at the mode.
	if err := v.roCheckLocked(dir); err != nil {
		return err
	}
	return permission(c, da, mayWrite|mayExec)
}

// Mkdir implements View.
func (v *Tx) Mkdir(c *Caller, at *Handle, path string, mode uint32) error {
	return withParentErr(v, c, at, path,
		func(hat *Handle, hp string) error { return v.host.Mkdir(c, hat, hp, mode) },
		func(t target) error {
			if t.node != nil || t.dir == nil {
				return unix.EEXIST
			}
			if err := v.mayCreateLocked(c, t.dir, t.name); err != nil {
				return err
			}
			_, err := v.createLocked(c, t.dir, t.name, unix.S_IFDIR|mode&0o1777, func(at int, sname string, perm uint32) error {
				return unix.Mkdirat(at, sname, perm)
			})
			return err
		})
}

// Mknod implements View.
func (v *Tx) Mknod(c *Caller, at *Handle, path string, mode uint32, dev uint64) error {
	return withParentErr(v, c, at, path,
		func(hat *Handle, hp string) error { return v.host.Mknod(c, hat, hp, mode, dev) },
		func(t target) error {
			if t.node != nil || t.dir == nil {
				return unix.EEXIST
			}
			if t.slash {
				return unix.ENOENT // filename_create: "you had / on the end"
			}
			typ := mode & unix.S_IFMT
			if (typ == unix.S_IFCHR || typ == unix.S_IFBLK) && !c.Cred.HasCap(unix.CAP_MKNOD) {
				return unix.EPERM
			}
			if err := v.mayCreateLocked(c, t.dir, t.name); err != nil {
				return err
			}
			_, err := v.createLocked(c, t.dir, t.name, typ|mode&0o7777, func(at int, sname string, perm uint32) error {
				return unix.Mknodat(at, sname, typ|perm, int(dev))
			})
			return err
		})
}

// Symlink implements View.
func (v *Tx) Symlink(c *Caller, linkTarget string, at *Handle, path string) error {
	return withParentErr(v, c, at, path,
		func(hat *Handle, hp string) error { return v.host.Symlink(c, linkTarget, hat, hp) },
		func(t target) error {
			if t.node != nil || t.dir == nil {
				return unix.EEXIST
			}
			if t.slash {
				return unix.ENOENT
			}
			if err := v.mayCreateLocked(c, t.dir, t.name); err != nil {
				return err
			}
			_, err := v.createLocked(c, t.dir, t.name, unix.S_IFLNK|0o777, func(at int, sname string, perm uint32) error {
				return unix.Symlinkat(linkTarget, at, sname)
			})
			return err
		})
}

// Unlink implements View (unlink and rmdir).
func (v *Tx) Unlink(c *Caller, at *Handle, path string, flags int) error {
	rmdir := flags&unix.AT_REMOVEDIR != 0
	return withParentErr(v, c, at, path,
		func(hat *Handle, hp string) error { return v.host.Unlink(c, hat, hp, flags) },
		func(t target) error {
			n := t.node
			if t.dir == nil {
				switch {
				case !rmdir:
					return unix.EISDIR
				case n == v.rootOf(c):
					return unix.EBUSY
				case lastComp(path) == "..":
					return unix.ENOTEMPTY
				}
				return unix.EINVAL
			}
			if n == nil {
				// do_unlinkat asks for write access to the mount
				// (mnt_want_write) before it looks the name up.
				if v.readOnlyMountLocked(t.dir) {
					return unix.EROFS
				}
				return unix.ENOENT
			}
			if !rmdir && t.slash {
				// do_unlinkat answers a trailing slash before it
				// looks at permissions.
				if n.isDir() {
					return unix.EISDIR
				}
				return unix.ENOTDIR
			}
			if err := v.mayDeleteLocked(c, t.dir, n, rmdir); err != nil {
				return err
			}
			vpath := childPath(t.dir.viewPathLocked(), t.name)
			if rmdir {
				if err := v.removableDirLocked(c, n, t.dir); err != nil {
					return err
				}
				v.setEntryLocked(t.dir, t.name, nil)
				v.detachDirLocked(n, t.dir)
				v.journalLocked(store.RedoOp{Kind: store.OpRmdir, Path: vpath, Ino: n.replayIno})
				return nil
			}
			v.setEntryLocked(t.dir, t.name, nil)
			v.linkCountLocked(n, -1)
			v.journalLocked(store.RedoOp{Kind: store.OpUnlink, Path: vpath, Ino: n.replayIno})
			v.buryLocked(n, vpath)
			return nil
		})
}

func lastComp(p string) string {
	parts := splitPath(p)
	if len(parts) == 0 {
		return ""
	}
	return parts[len(parts)-1]
}

// mayDeleteLocked checks removing victim from dir (mayDelete; isDir says
// whether the call removes a directory).
//
// Preconditions: v.mu held.
func (v *Tx) mayDeleteLocked(c *Caller, dir, victim *Node, isDir bool) error {
	da, err := v.attrsLocked(dir)
	if err != nil {
		return err
	}
	va, err := v.attrsLocked(victim)
	if err != nil {
		return err
	}
	// inode_permission(dir, MAY_WRITE) refuses a read-only mount and an
	// immutable directory before it looks at the mode.
	dflags := v.hostFlagsLocked(dir)
	if err := v.roCheckFlagsLocked(dir, dflags); err != nil {
		return err
	}
	return mayDelete(c, da, va, dflags, v.hostFlagsLocked(victim), isDir)
}

// removableDirLocked checks that directory n can be removed: empty in the
// view, not a mount point, not the caller's root.
func (v *Tx) removableDirLocked(c *Caller, n, parent *Node) error {
	if n == v.rootOf(c) || n == v.root {
		return unix.EBUSY
	}
	if n.host != (FileID{}) && parent.host != (FileID{}) && n.host.Dev != parent.host.Dev {
		return unix.EBUSY
	}
	ents, _, _, err := v.listLocked(n)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return unix.ENOTEMPTY
	}
	return nil
}

// detachDirLocked takes directory n out of the view.
func (v *Tx) detachDirLocked(n, parent *Node) {
	n.removed = true
	// rmdir, and a rename over an empty directory, clear the victim's
	// links (clear_nlink): a descriptor or cwd still on it sees 0.
	n.nlink, n.nlinkSet = 0, true
	n.parent, n.removedFrom = nil, parent
	v.linkCountLocked(parent, -1)
}

// Link implements View.
func (v *Tx) Link(c *Caller, oldAt *Handle, oldPath string, newAt *Handle, newPath string, flags int) error {
	v.mu.Lock()
	old, err := v.resolveLocked(c, oldAt, oldPath, followFinal.If(flags&unix.AT_SYMLINK_FOLLOW != 0)|atEmptyPath(flags))
	if err != nil {
		v.mu.Unlock()
		return err
	}
	nt, err := v.resolveParentLocked(c, newAt, newPath)
	if err != nil {
		v.mu.Unlock()
		return err
	}
	if old.pass || nt.pass {
		v.mu.Unlock()
		if old.pass && nt.pass {
			return v.host.Link(c, old.hostAt, old.hostPath, nt.hostAt, nt.hostPath, flags)
		}
		return unix.EXDEV
	}
	defer v.mu.Unlock()
	n := old.node
	if n == nil {
		return unix.ENOENT
	}
	// do_linkat's order: the new name, the mounts, protected_hardlinks,
	// then vfs_link's may_create and its refusal of directories.
	if nt.node != nil || nt.dir == nil {
		return unix.EEXIST
	}
	if nt.slash {
		return unix.ENOENT
	}
	if old.magic && !n.isDir() && v.magicLinkatRefusedLocked() {
		return unix.EXDEV
	}
	od := old.dir
	if od == nil {
		od = n.locDir
	}
	if od == nil && n.anon {
		// An O_TMPFILE is on the mount of the directory it was made in,
		// and its staged object in that mount's staging area.
		od = n.tmpDir
	}
	if od != nil && v.mountOfLocked(od) != v.mountOfLocked(nt.dir) {
		return unix.EXDEV
	}
	if err := v.mayLinkLocked(c, n); err != nil {
		return err
	}
	if err := v.mayCreateLocked(c, nt.dir, nt.name); err != nil {
		return err
	}
	if n.isDir() {
		return unix.EPERM
	}
	newVPath := childPath(nt.dir.viewPathLocked(), nt.name)
	if n.anon {
		// An O_TMPFILE gets its first name: it becomes a staged object.
		// (An O_EXCL one cannot: the kernel refuses the link, ENOENT.)
		sname := v.newStagedNameLocked()
		if err := unix.Linkat(n.anonFd, "", n.area.fd, sname, unix.AT_EMPTY_PATH); err != nil {
			return err
		}
		unix.Close(n.anonFd)
		n.anon, n.anonFd = false, -1
		n.staged = sname
		n.locDir, n.locName = nt.dir, nt.name
		v.setEntryLocked(nt.dir, nt.name, n)
		n.addNameLocked(nt.dir, nt.name)
		v.journalLocked(store.RedoOp{Kind: store.OpRename, Src: n.area.pathOf(sname), Path: newVPath, Ino: n.stagedID.Ino})
		return nil
	}
	oldVPath, err := v.linkSourceLocked(old)
	if err != nil {
		return err
	}
	if n.staged == "" {
		// A host original with another name now: commit must keep its
		// identity (hard-link groups stay groups), so a later copy-up
		// writes back into it rather than replacing one name.
		n.inPlace = true
	}
	v.setEntryLocked(nt.dir, nt.name, n)
	n.addNameLocked(nt.dir, nt.name)
	v.linkCountLocked(n, +1)
	if n.locDir == nil {
		n.locDir, n.locName = nt.dir, nt.name
	}
	v.journalLocked(store.RedoOp{Kind: store.OpLink, Src: oldVPath, Path: newVPath, Ino: n.replayIno})
	return nil
}

// magicLinkat is whether this kernel refuses linkat(AT_SYMLINK_FOLLOW)
// through a /proc/PID/fd/N magic link to a file (EXDEV), as 6.18 does,
// probed once in the home staging area.
var magicLinkat struct {
	once    sync.Once
	refused bool
}

// magicLinkatRefusedLocked reports magicLinkat.refused.
//
// Preconditions: v.mu held.
func (v *Tx) magicLinkatRefusedLocked() bool {
	magicLinkat.once.Do(func() {
		const a, b = "probe-linkat-a", "probe-linkat-b"
		fd, err := unix.Openat(v.home.fd, a, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		defer unix.Unlinkat(v.home.fd, a, 0)
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), v.home.fd, b, unix.AT_SYMLINK_FOLLOW)
		if err == nil {
			unix.Unlinkat(v.home.fd, b, 0)
		}
		magicLinkat.refused = err == unix.EXDEV
	})
	return magicLinkat.refused
}

// mayLinkLocked applies fs.protected_hardlinks: a user who does not own a
// file may link it only if it is a regular, non-set-ID file they can read
// and write.
func (v *Tx) mayLinkLocked(c *Caller, n *Node) error {
	if v.hostFlagsLocked(n)&(unix.STATX_ATTR_APPEND|unix.STATX_ATTR_IMMUTABLE) != 0 {
		return unix.EPERM // vfs_link
	}
	if !protectedHardlinks() {
		return nil
	}
	a, err := v.attrsLocked(n)
	if err != nil {
		return err
	}
	if isOwner(c, a) {
		return nil
	}
	if a.mode&unix.S_IFMT == unix.S_IFREG && a.mode&unix.S_ISUID == 0 &&
		a.mode&(unix.S_ISGID|unix.S_IXGRP) != unix.S_ISGID|unix.S_IXGRP &&
		permission(c, a, mayRead|mayWrite) == nil {
		return nil
	}
	return unix.EPERM
}
