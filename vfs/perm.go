package vfs

import (
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
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

// isOwner is inode_owner_or_capable: the caller owns the object or has
// CAP_FOWNER.
func isOwner(c *Caller, a attrs) bool {
	return c.Cred.FSUID == a.uid || c.Cred.HasCap(unix.CAP_FOWNER)
}

// mayDelete checks removing or renaming away an entry of dir (Linux's
// may_delete): write and search on dir, and the sticky-bit rule.
func mayDelete(c *Caller, dir, victim attrs) error {
	if err := permission(c, dir, mayWrite|mayExec); err != nil {
		return err
	}
	if dir.mode&unix.S_ISVTX != 0 && c.Cred.FSUID != victim.uid && c.Cred.FSUID != dir.uid &&
		!c.Cred.HasCap(unix.CAP_FOWNER) {
		return unix.EPERM
	}
	return nil
}

// newOwner is the owner and mode of an object c creates in dir: the fsuid,
// the directory's group when it is set-group-ID (with the bit inherited by
// directories), else the fsgid.
func newOwner(c *Caller, dir attrs, mode uint32) (uid, gid, outMode uint32) {
	uid, gid = c.Cred.FSUID, c.Cred.FSGID
	if dir.mode&unix.S_ISGID != 0 {
		gid = dir.gid
		if mode&unix.S_IFMT == unix.S_IFDIR {
			mode |= unix.S_ISGID
		} else if mode&unix.S_ISGID != 0 && !c.Cred.InGroup(gid) && !c.Cred.HasCap(unix.CAP_FSETID) {
			mode &^= unix.S_ISGID
		}
	}
	return uid, gid, mode
}

// protectedHardlinks reads the fs.protected_hardlinks sysctl once.
var protectedHardlinks = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/sys/fs/protected_hardlinks")
	return err == nil && strings.TrimSpace(string(b)) == "1"
})
