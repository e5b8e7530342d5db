package vfs

import (
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"txexec/proc"
)

// Access bits, as Linux's MAY_*.
const (
	mayExec  = 1
	mayWrite = 2
	mayRead  = 4
)

// attrs are the attributes permission checks look at.
type attrs struct {
	mode     uint32 // with S_IFMT
	uid, gid uint32
}

func attrsOf(st *unix.Stat_t) attrs { return attrs{mode: st.Mode, uid: st.Uid, gid: st.Gid} }

// permission is Linux's generic_permission for c's fs credentials (POSIX
// ACLs are not consulted: docs/semantics.md).
func permission(c *Caller, a attrs, want uint32) error {
	cr := c.Cred
	var bits uint32
	switch {
	case cr.FSUID == a.uid:
		bits = a.mode >> 6
	case cr.InGroup(a.gid):
		bits = a.mode >> 3
	default:
		bits = a.mode
	}
	if want&^(bits&7) == 0 {
		return nil
	}
	isDir := a.mode&unix.S_IFMT == unix.S_IFDIR
	// CAP_DAC_OVERRIDE: read and write anything; search any directory;
	// execute a file if any execute bit is set.
	if cr.HasCap(unix.CAP_DAC_OVERRIDE) {
		if want&mayExec == 0 || isDir || a.mode&0o111 != 0 {
			return nil
		}
	}
	// CAP_DAC_READ_SEARCH: read anything, search directories.
	if cr.HasCap(unix.CAP_DAC_READ_SEARCH) {
		if want == mayRead || (isDir && want&mayWrite == 0) {
			return nil
		}
	}
	return unix.EACCES
}

// accessCred is what access(2) without AT_EACCESS checks with (Linux's
// access_override_creds): the real uid and gid as the fs ids and, since the
// call asks what the real user may do, for a real root its permitted
// capabilities and for anyone else none.
func accessCred(cr *proc.Cred) *proc.Cred {
	o := *cr
	o.FSUID, o.FSGID = cr.UID, cr.GID
	o.CapEff = 0
	if cr.UID == 0 {
		o.CapEff = cr.CapPrm
	}
	return &o
}

// isOwner is inode_owner_or_capable: the caller owns the object or has
// CAP_FOWNER.
func isOwner(c *Caller, a attrs) bool {
	return c.Cred.FSUID == a.uid || c.Cred.HasCap(unix.CAP_FOWNER)
}

// timesTouch reports whether utimensat's times ask only for the current
// time: NULL or both UTIME_NOW, which vfs_utimes turns into a "touch"
// (ATTR_TOUCH). Any other combination — explicit times, and UTIME_NOW
// with UTIME_OMIT as touch -a and -m send — sets the times
// (ATTR_TIMES_SET).
func timesTouch(ts *[2]unix.Timespec) bool {
	return ts == nil || ts[0].Nsec == unix.UTIME_NOW && ts[1].Nsec == unix.UTIME_NOW
}

// mayChangeTimes checks changing an object's times (fs/attr.c): the owner
// and CAP_FOWNER may set any times; anyone else may only touch
// (timesTouch), and only with write permission.
func mayChangeTimes(c *Caller, a attrs, touch bool) error {
	if isOwner(c, a) {
		return nil
	}
	if !touch {
		return unix.EPERM
	}
	return permission(c, a, mayWrite)
}

// mayDelete checks removing or renaming away entry victim of dir, in the
// order of Linux's may_delete (after inode_permission's read-only and
// immutable checks of dir, which the caller makes): write and search on
// dir; nothing leaves an append-only directory; the sticky-bit rule, and
// an append-only or immutable victim stays; only then the victim's type,
// which must be a directory when isDir (rmdir, or renaming a directory)
// and must not be one otherwise. dirFlags and victimFlags are their
// STATX_ATTR_APPEND and STATX_ATTR_IMMUTABLE attributes.
func mayDelete(c *Caller, dir, victim attrs, dirFlags, victimFlags uint64, isDir bool) error {
	if err := permission(c, dir, mayWrite|mayExec); err != nil {
		return err
	}
	if dirFlags&unix.STATX_ATTR_APPEND != 0 {
		return unix.EPERM
	}
	if dir.mode&unix.S_ISVTX != 0 && c.Cred.FSUID != victim.uid && c.Cred.FSUID != dir.uid &&
		!c.Cred.HasCap(unix.CAP_FOWNER) {
		return unix.EPERM
	}
	if victimFlags&(unix.STATX_ATTR_APPEND|unix.STATX_ATTR_IMMUTABLE) != 0 {
		return unix.EPERM
	}
	victimDir := victim.mode&unix.S_IFMT == unix.S_IFDIR
	if isDir && !victimDir {
		return unix.ENOTDIR
	}
	if !isDir && victimDir {
		return unix.EISDIR
	}
	return nil
}

// newOwner is the owner and mode of an object c creates in dir with the
// requested mode (type and permission bits, before the umask), as Linux's
// vfs_prepare_mode and inode_init_owner make them: set-group-ID is
// stripped (mode_strip_sgid) before the umask applies, so the group
// execute bit it looks at is the one asked for; the umask applies to all
// but symlinks; the owner is the fsuid, the group the directory's when it
// is set-group-ID (with the bit inherited by directories), else the fsgid.
func newOwner(c *Caller, dir attrs, mode uint32) (uid, gid, outMode uint32) {
	typ := mode & unix.S_IFMT
	if mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP && typ != unix.S_IFDIR &&
		dir.mode&unix.S_ISGID != 0 && !c.Cred.InGroup(dir.gid) && !c.Cred.HasCap(unix.CAP_FSETID) {
		mode &^= unix.S_ISGID
	}
	if typ != unix.S_IFLNK {
		mode &^= c.Umask & 0o7777
	}
	uid, gid = c.Cred.FSUID, c.Cred.FSGID
	if dir.mode&unix.S_ISGID != 0 {
		gid = dir.gid
		if typ == unix.S_IFDIR {
			mode |= unix.S_ISGID
		}
	}
	return uid, gid, mode
}

// protectedHardlinks reads the fs.protected_hardlinks sysctl once.
var protectedHardlinks = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/sys/fs/protected_hardlinks")
	return err == nil && strings.TrimSpace(string(b)) == "1"
})
