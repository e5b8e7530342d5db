package vfs

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// modify resolves the object of an attribute change, copies it up and runs
// fn on it; then journals the attributes in mask for objects that keep
// their identity at commit.
func (v *Tx) modify(c *Caller, at *Handle, path string, follow, emptyOK bool, mask store.AttrMask,
	pass func(hat *Handle, hp string) error, fn func(n *Node, a attrs, vpath string) error) error {
	return withErr(v, c, at, path, follow, emptyOK, pass, func(t target) error {
		n := t.node
		if n == nil {
			return unix.ENOENT
		}
		a, err := v.attrsLocked(n)
		if err != nil {
			return err
		}
		if err := v.roCheckLocked(n); err != nil {
			return err
		}
		// notify_change: mode, owner and extended attributes never
		// change on an append-only file (times: see Utimens).
		if mask&^(store.AttrAtime|store.AttrMtime) != 0 {
			if err := v.appendOnlyLocked(n, false, ""); err != nil {
				return err
			}
		}
		vpath, err := v.pathOfLocked(t)
		if err != nil && !n.anon && (n.staged == "" || n.inPlace) {
			// Reached by a descriptor whose name the view no longer
			// knows: the journal could not say where to apply it.
			return err
		}
		// Whatever fn got done, the cached attributes may be stale.
		err = fn(n, a, vpath)
		n.attrSet = false
		if err != nil {
			return err
		}
		return v.setattrLocked(n, vpath, mask)
	})
}

// Chmod implements View.
func (v *Tx) Chmod(c *Caller, at *Handle, path string, mode uint32, flags int) error {
	return v.modify(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0, store.AttrMode,
		func(hat *Handle, hp string) error { return v.host.Chmod(c, hat, hp, mode, flags) },
		func(n *Node, a attrs, vpath string) error {
			if n.typ == unix.S_IFLNK {
				return unix.EOPNOTSUPP
			}
			if !isOwner(c, a) {
				return unix.EPERM
			}
			if !c.Cred.InGroup(a.gid) && !c.Cred.HasCap(unix.CAP_FSETID) {
				mode &^= unix.S_ISGID
			}
			if err := v.copyUpLocked(n, vpath); err != nil {
				return err
			}
			p, _ := v.objPath(n)
			return unix.Fchmodat(unix.AT_FDCWD, p, mode&0o7777, 0)
		})
}

// Chown implements View.
func (v *Tx) Chown(c *Caller, at *Handle, path string, uid, gid uint32, flags int) error {
	return v.modify(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0,
		store.AttrMode|store.AttrUID|store.AttrGID,
		func(hat *Handle, hp string) error { return v.host.Chown(c, hat, hp, uid, gid, flags) },
		func(n *Node, a attrs, vpath string) error {
			const keep = ^uint32(0)
			capChown := c.Cred.HasCap(unix.CAP_CHOWN)
			owner := c.Cred.FSUID == a.uid
			// chown_ok and chgrp_ok of fs/attr.c.
			if uid != keep && !(owner && uid == a.uid) && !capChown {
				return unix.EPERM
			}
			if gid != keep && !(owner && (gid == a.gid || c.Cred.InGroup(gid))) && !capChown {
				return unix.EPERM
			}
			if uid == keep && gid == keep && !chownKillsSetID(c, n, a) {
				// Only ctime changes; nothing to stage.
				v.touchCtimeLocked(n)
				return nil
			}
			if uid == keep && gid == keep && !isOwner(c, a) {
				// The set-ID bits it clears are a mode change, which
				// needs ownership (notify_change turns ATTR_KILL_S*ID
				// into ATTR_MODE, setattr_prepare checks it).
				return unix.EPERM
			}
			if err := v.copyUpLocked(n, vpath); err != nil {
				return err
			}
			// The kernel clears set-ID bits of non-directories on chown,
			// for the supervisor as it would for the caller — except
			// set-group-ID without group execute, which it keeps for a
			// caller in the file's group before the change or with CAP_FSETID
			// (setattr_should_drop_sgid): the supervisor always is.
			p, nofollow := v.objPath(n)
			if err := unix.Fchownat(unix.AT_FDCWD, p, int(int32(uid)), int(int32(gid)), nofollow); err != nil {
				return err
			}
			var st unix.Stat_t
			if n.isDir() || n.typ == unix.S_IFLNK || unix.Lstat(p, &st) != nil {
				return nil
			}
			if st.Mode&unix.S_ISGID != 0 && st.Mode&unix.S_IXGRP == 0 &&
				!c.Cred.InGroup(a.gid) && !c.Cred.HasCap(unix.CAP_FSETID) {
				return unix.Fchmodat(unix.AT_FDCWD, p, st.Mode&0o7777&^unix.S_ISGID, 0)
			}
			return nil
		})
}

// chownKillsSetID reports whether a chown of n by c clears set-ID bits
// (chown_common's ATTR_KILL_SUID and setattr_should_drop_sgid): set-user-ID,
// and set-group-ID with group execute or for a caller outside the file's
// group without CAP_FSETID; directories keep theirs.
func chownKillsSetID(c *Caller, n *Node, a attrs) bool {
	if n.isDir() {
		return false
	}
	if a.mode&unix.S_ISUID != 0 {
		return true
	}
	return a.mode&unix.S_ISGID != 0 &&
		(a.mode&unix.S_IXGRP != 0 || !c.Cred.InGroup(a.gid) && !c.Cred.HasCap(unix.CAP_FSETID))
}

// Utimens implements View.
func (v *Tx) Utimens(c *Caller, at *Handle, path string, ts *[2]unix.Timespec, flags int) error {
	if ts != nil && ts[0].Nsec == unix.UTIME_OMIT && ts[1].Nsec == unix.UTIME_OMIT {
		// utimensat(2): "Nothing to do, we must not even check the path"
		// (fs/utimes.c).
		return nil
	}
	return v.modify(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0 || path == "",
		store.AttrAtime|store.AttrMtime,
		func(hat *Handle, hp string) error { return v.host.Utimens(c, hat, hp, ts, flags) },
		func(n *Node, a attrs, vpath string) error {
			toNow := timesTouch(ts)
			if err := mayChangeTimes(c, a, toNow); err != nil {
				return err
			}
			if err := v.appendOnlyLocked(n, toNow, "setting the times of"); err != nil {
				return err
			}
			if err := v.copyUpLocked(n, vpath); err != nil {
				return err
			}
			times := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
			if ts != nil {
				times = []unix.Timespec{ts[0], ts[1]}
			}
			if times[1].Nsec == unix.UTIME_OMIT && n.changed != nil {
				// The view's modification time (of a directory's
				// entries, of a FIFO's last writer) is not the backing
				// object's: an omitted one must stay what the view shows.
				times[1] = *n.changed
			}
			p, nofollow := v.objPath(n)
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, times, nofollow); err != nil {
				return err
			}
			// Explicit times replace the view's change time (of a
			// directory's entries, of a FIFO's last writer).
			n.changed = nil
			return nil
		})
}

// Truncate implements View.
func (v *Tx) Truncate(c *Caller, at *Handle, path string, size int64) error {
	return withErr(v, c, at, path, true, false,
		func(hat *Handle, hp string) error { return v.host.Truncate(c, hat, hp, size) },
		func(t target) error {
			n := t.node
			if n == nil {
				return unix.ENOENT
			}
			if n.isDir() {
				return unix.EISDIR
			}
			if n.typ != unix.S_IFREG {
				return unix.EINVAL
			}
			a, err := v.attrsLocked(n)
			if err != nil {
				return err
			}
			if err := permission(c, a, mayWrite); err != nil {
				return err
			}
			if err := v.roCheckLocked(n); err != nil {
				return err
			}
			if err := v.appendOnlyLocked(n, false, ""); err != nil {
				return err
			}
			if err := v.textBusyLocked(n, a); err != nil {
				return err
			}
			vpath, err := v.pathOfLocked(t)
			if err != nil && !n.anon {
				return err
			}
			if err := v.copyUpLocked(n, vpath); err != nil {
				return err
			}
			n.dataChanged = true
			p, _ := v.objPath(n)
			return unix.Truncate(p, size)
		})
}

// Setxattr implements View. On a host original that keeps its identity at
// commit (a directory, a multiply-linked file) the change is journaled as
// its own redo record (journalXattrLocked).
func (v *Tx) Setxattr(c *Caller, at *Handle, path string, op XattrOp, name string, value []byte, flags int) error {
	// AttrMode: setting system.posix_acl_access sets the mode too (cp -a
	// gives a new directory its mode that way), and a setattr journaled
	// earlier must not bring the old mode back.
	return v.modify(c, at, path, !op.NoFollow, op.EmptyAt, store.AttrMode,
		func(hat *Handle, hp string) error { return v.host.Setxattr(c, hat, hp, op, name, value, flags) },
		func(n *Node, a attrs, vpath string) error {
			if err := v.xattrWritePermLocked(c, n, a, name); err != nil {
				return err
			}
			if err := v.copyUpLocked(n, vpath); err != nil {
				return err
			}
			var err error
			if p, nofollow := v.objPath(n); nofollow == 0 {
				err = unix.Setxattr(p, name, value, flags)
			} else {
				err = unix.Lsetxattr(n.area.pathOf(n.staged), name, value, flags)
			}
			if err == nil {
				v.journalXattrLocked(n, vpath, store.OpSetxattr, name, value)
			}
			return err
		})
}

// Removexattr implements View.
func (v *Tx) Removexattr(c *Caller, at *Handle, path string, op XattrOp, name string) error {
	return v.modify(c, at, path, !op.NoFollow, op.EmptyAt, store.AttrMode,
		func(hat *Handle, hp string) error { return v.host.Removexattr(c, hat, hp, op, name) },
		func(n *Node, a attrs, vpath string) error {
			if err := v.xattrWritePermLocked(c, n, a, name); err != nil {
				return err
			}
			if err := v.copyUpLocked(n, vpath); err != nil {
				return err
			}
			var err error
			if p, nofollow := v.objPath(n); nofollow == 0 {
				err = unix.Removexattr(p, name)
			} else {
				err = unix.Lremovexattr(n.area.pathOf(n.staged), name)
			}
			if err == nil {
				v.journalXattrLocked(n, vpath, store.OpRemovexattr, name, nil)
			}
			return err
		})
}

// journalXattrLocked journals an extended attribute change of a host
// original that keeps its identity at commit (a directory, a file with
// several links): its staged copy never replaces it, so the change itself
// is replayed on it. Other objects carry their attributes in the staged
// object that replaces them.
//
// Preconditions: v.mu held.
func (v *Tx) journalXattrLocked(n *Node, path string, kind store.OpKind, name string, value []byte) {
	if !n.inPlace || n.host == (FileID{}) {
		return
	}
	v.journalOnLocked(n, store.RedoOp{Kind: kind, Path: path, Ino: n.replayIno, XattrName: name,
		XattrValue: append([]byte(nil), value...)})
}

// xattrWritePermLocked checks setting or removing extended attribute name
// of n for c, as Linux's xattr_permission and the capability module's
// cap_inode_setxattr/cap_inode_removexattr do (no other security module):
// the supervisor then performs the change with its own privileges, so
// every namespace that needs a capability must be checked here.
func (v *Tx) xattrWritePermLocked(c *Caller, n *Node, a attrs, name string) error {
	switch {
	case strings.HasPrefix(name, "user."):
		if n.typ != unix.S_IFREG && n.typ != unix.S_IFDIR {
			return unix.EPERM
		}
		return permission(c, a, mayWrite)
	case strings.HasPrefix(name, "trusted."):
		if !c.Cred.HasCap(unix.CAP_SYS_ADMIN) {
			return unix.EPERM
		}
	case name == "security.capability":
		// File capabilities: CAP_SETFCAP (cap_convert_nscap).
		if !c.Cred.HasCap(unix.CAP_SETFCAP) {
			return unix.EPERM
		}
	case strings.HasPrefix(name, "security."):
		if !c.Cred.HasCap(unix.CAP_SYS_ADMIN) {
			return unix.EPERM
		}
	case name == "system.posix_acl_access", name == "system.posix_acl_default":
		// posix_acl_xattr_set: the owner, or CAP_FOWNER.
		if !isOwner(c, a) {
			return unix.EPERM
		}
	default:
		return unix.EOPNOTSUPP
	}
	return nil
}

// objPath names n's staged object for calls the supervisor makes by path,
// with the AT_SYMLINK_NOFOLLOW flag they need: its path in its staging
// area, or for an unnamed O_TMPFILE object the magic link of the view's
// descriptor on it, which must be followed (flag 0).
func (v *Tx) objPath(n *Node) (string, int) {
	if n.anon {
		return "/proc/self/fd/" + strconv.Itoa(n.anonFd), 0
	}
	return n.area.pathOf(n.staged), unix.AT_SYMLINK_NOFOLLOW
}
