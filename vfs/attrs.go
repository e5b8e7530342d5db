package vfs

import (
	"txexec/store"

	"golang.org/x/sys/unix"
)

// Stat implements View.
func (v *Tx) Stat(c *Caller, at *Handle, path string, flags int) (unix.Stat_t, error) {
	return with(v, c, at, path, atLookup(flags),
		func(hat *Handle, hp string) (unix.Stat_t, error) { return v.host.Stat(c, hat, hp, flags) },
		func(t target) (unix.Stat_t, error) {
			if t.node == nil {
				return unix.Stat_t{}, unix.ENOENT
			}
			st, err := v.statAsLocked(t.node, statGranules(at, path, flags, t.node))
			if err == nil && v.VirtualInodes {
				st.Ino = v.inoLocked(t.node)
			}
			return st, err
		})
}

// statGranules is what a stat call reads of the object n it resolved: its
// attributes; but only its data when it asks for a regular file's own
// descriptor open for reading or writing — fstat, which glibc spells
// fstatat(fd, "", AT_EMPTY_PATH). The kernel serves fstat(2) itself,
// unseen by txexec, so that stat of a descriptor is, whichever way the C
// library spells it, part of reading the file through it: the size and
// mtime it shows are validated with the data, the mode and owner are not
// (docs/semantics.md §1).
func statGranules(at *Handle, path string, flags int, n *Node) granules {
	if path != "" || flags&unix.AT_EMPTY_PATH == 0 || at == nil || at.fd < 0 || at.node != n || n.typ != unix.S_IFREG {
		return readMeta
	}
	if fl, err := unix.FcntlInt(uintptr(at.fd), unix.F_GETFL, 0); err != nil || fl&unix.O_PATH != 0 {
		return readMeta
	}
	return readData
}

// statOfStatx is the stat(2) form of the fields of stx that the view
// reads and adjusts.
func statOfStatx(stx *unix.Statx_t) unix.Stat_t {
	return unix.Stat_t{
		Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino,
		Nlink: uint64(stx.Nlink), Mode: uint32(stx.Mode), Uid: stx.Uid, Gid: stx.Gid,
		Size: int64(stx.Size), Blocks: int64(stx.Blocks),
		Atim: unix.Timespec{Sec: stx.Atime.Sec, Nsec: int64(stx.Atime.Nsec)},
		Mtim: unix.Timespec{Sec: stx.Mtime.Sec, Nsec: int64(stx.Mtime.Nsec)},
		Ctim: unix.Timespec{Sec: stx.Ctime.Sec, Nsec: int64(stx.Ctime.Nsec)},
	}
}

// Statx implements View.
func (v *Tx) Statx(c *Caller, at *Handle, path string, flags int, mask uint32) (unix.Statx_t, error) {
	return with(v, c, at, path, atLookup(flags),
		func(hat *Handle, hp string) (unix.Statx_t, error) { return v.host.Statx(c, hat, hp, flags, mask) },
		func(t target) (unix.Statx_t, error) {
			var stx unix.Statx_t
			n := t.node
			if n == nil {
				return stx, unix.ENOENT
			}
			// The basic fields too, whatever the caller asked for: the
			// view's are computed from them (local file systems fill them
			// anyway).
			m := int(mask | unix.STATX_BASIC_STATS)
			byName := false // the host object was looked up by name
			var err error
			switch {
			case n.anon:
				err = unix.Statx(n.anonFd, "", unix.AT_EMPTY_PATH, m, &stx)
			case n.staged != "" && n.keepsIdentity():
				// As statLocked: the host object's identity, the staged
				// copy's attributes.
				var sstx unix.Statx_t
				if err = unix.Statx(n.area.fd, n.staged, unix.AT_SYMLINK_NOFOLLOW, m, &sstx); err == nil {
					if n.hostFd >= 0 {
						err = unix.Statx(n.hostFd, "", unix.AT_EMPTY_PATH, m, &stx)
					} else {
						err, byName = unix.Statx(n.hostParent.hostFd, n.hostName, unix.AT_SYMLINK_NOFOLLOW, m, &stx), true
					}
					if err == nil {
						stx.Mode, stx.Uid, stx.Gid = sstx.Mode, sstx.Uid, sstx.Gid
						stx.Atime, stx.Mtime, stx.Ctime = sstx.Atime, sstx.Mtime, sstx.Ctime
					}
				}
			case n.staged != "":
				if err = unix.Statx(n.area.fd, n.staged, unix.AT_SYMLINK_NOFOLLOW, m, &stx); err == nil && v.StampTimes {
					sst := statOfStatx(&stx)
					if err = v.stampLocked(n, &sst); err == nil {
						stx.Atime = unix.StatxTimestamp{Sec: sst.Atim.Sec, Nsec: uint32(sst.Atim.Nsec)}
						stx.Mtime = unix.StatxTimestamp{Sec: sst.Mtim.Sec, Nsec: uint32(sst.Mtim.Nsec)}
					}
				}
			case n.hostFd >= 0:
				err = unix.Statx(n.hostFd, "", unix.AT_EMPTY_PATH, m, &stx)
			case n.hostParent != nil:
				err, byName = unix.Statx(n.hostParent.hostFd, n.hostName, unix.AT_SYMLINK_NOFOLLOW, m, &stx), true
			default:
				err = unix.ESTALE
			}
			st := statOfStatx(&stx)
			if err == nil && byName && !n.isHostObject(&st) {
				err = unix.ESTALE
			}
			if err != nil {
				return stx, v.hostChanged(n.hostPath, err)
			}
			// The view's link count, times and directory size, as Stat.
			v.viewAttrsLocked(n, &st, statGranules(at, path, flags, n))
			stx.Nlink = uint32(st.Nlink)
			if v.VirtualInodes {
				stx.Ino = v.inoLocked(n)
			}
			stx.Size, stx.Blocks = uint64(st.Size), uint64(st.Blocks)
			stx.Mtime = unix.StatxTimestamp{Sec: st.Mtim.Sec, Nsec: uint32(st.Mtim.Nsec)}
			stx.Ctime = unix.StatxTimestamp{Sec: st.Ctim.Sec, Nsec: uint32(st.Ctim.Nsec)}
			return stx, nil
		})
}

// Access implements View. access(2) checks with the real ids unless
// AT_EACCESS (accessCred).
func (v *Tx) Access(c *Caller, at *Handle, path string, mode uint32, flags int) error {
	return withErr(v, c, at, path, atLookup(flags),
		func(hat *Handle, hp string) error { return v.host.Access(c, hat, hp, mode, flags) },
		func(t target) error {
			if t.node == nil {
				return unix.ENOENT
			}
			if mode == unix.F_OK {
				return nil
			}
			if err := v.readAttrsLocked(t.node); err != nil {
				return err
			}
			who := c
			if flags&unix.AT_EACCESS == 0 {
				who = &Caller{Tid: c.Tid, Tgid: c.Tgid, Cred: accessCred(c.Cred)}
			}
			a, err := v.attrsLocked(t.node)
			if err != nil {
				return err
			}
			var want uint32
			if mode&unix.R_OK != 0 {
				want |= mayRead
			}
			if mode&unix.W_OK != 0 {
				want |= mayWrite
			}
			if mode&unix.X_OK != 0 {
				want |= mayExec
			}
			return permission(who, a, want)
		})
}

// Statfs implements View.
func (v *Tx) Statfs(c *Caller, at *Handle, path string) (unix.Statfs_t, error) {
	return with(v, c, at, path, followFinal,
		func(hat *Handle, hp string) (unix.Statfs_t, error) { return v.host.Statfs(c, hat, hp) },
		func(t target) (unix.Statfs_t, error) {
			var st unix.Statfs_t
			if t.node == nil {
				return st, unix.ENOENT
			}
			fd, err := v.openBackingLocked(t.node, unix.O_PATH)
			if err != nil {
				return st, err
			}
			defer unix.Close(fd)
			return st, unix.Fstatfs(fd, &st)
		})
}

// modify resolves the object of an attribute change, copies it up and runs
// fn on it; then journals the attributes in mask for objects that keep
// their identity at commit.
func (v *Tx) modify(c *Caller, at *Handle, path string, lk lookupHow, mask store.AttrMask,
	pass func(hat *Handle, hp string) error, fn func(n *Node, a attrs, vpath string) error) error {
	return withErr(v, c, at, path, lk, pass, func(t target) error {
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
	return v.modify(c, at, path, atLookup(flags), store.AttrMode,
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
	return v.modify(c, at, path, atLookup(flags),
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
	return v.modify(c, at, path, atLookup(flags)|emptyPathOK.If(path == ""),
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
			if v.StampTimes {
				// "Now" is the view's clock, not the host kernel's.
				now := v.nowLocked()
				for i := range times {
					if times[i].Nsec == unix.UTIME_NOW {
						times[i] = now
					}
				}
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
			v.sawTimesLocked(n)
			return nil
		})
}

// Truncate implements View.
func (v *Tx) Truncate(c *Caller, at *Handle, path string, size int64) error {
	return withErr(v, c, at, path, followFinal,
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
