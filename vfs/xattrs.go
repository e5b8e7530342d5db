package vfs

import (
	"strconv"
	"strings"
	"txexec/store"

	"golang.org/x/sys/unix"
)

// Getxattr implements View.
func (v *Tx) Getxattr(c *Caller, at *Handle, path string, op XattrOp, name string, size int) ([]byte, int, error) {
	type res struct {
		b []byte
		n int
	}
	r, err := with(v, c, at, path, followFinal.If(!op.NoFollow)|emptyPathOK.If(op.EmptyAt),
		func(hat *Handle, hp string) (res, error) {
			b, n, err := v.host.Getxattr(c, hat, hp, op, name, size)
			return res{b, n}, err
		},
		func(t target) (res, error) {
			if t.node == nil {
				return res{}, unix.ENOENT
			}
			if err := v.xattrReadPermLocked(c, t.node, name); err != nil {
				return res{}, err
			}
			if err := v.readAttrsLocked(t.node); err != nil {
				return res{}, err
			}
			buf := make([]byte, size)
			n, err := unix.Lgetxattr(v.backingPath(t.node), name, buf)
			if err != nil {
				return res{}, err
			}
			if size == 0 {
				return res{nil, n}, nil
			}
			return res{buf[:n], n}, nil
		})
	return r.b, r.n, err
}

// xattrReadPermLocked: user.* attributes need read permission; trusted.*
// needs CAP_SYS_ADMIN (and is invisible otherwise).
func (v *Tx) xattrReadPermLocked(c *Caller, n *Node, name string) error {
	switch {
	case strings.HasPrefix(name, "user."):
		a, err := v.attrsLocked(n)
		if err != nil {
			return err
		}
		return permission(c, a, mayRead)
	case strings.HasPrefix(name, "trusted."):
		if !c.Cred.HasCap(unix.CAP_SYS_ADMIN) {
			return unix.ENODATA
		}
	}
	return nil
}

// backingPath names n's backing object for the path-only xattr calls.
func (v *Tx) backingPath(n *Node) string {
	if n.staged != "" {
		return n.area.pathOf(n.staged)
	}
	return n.hostPath
}

// Listxattr implements View.
func (v *Tx) Listxattr(c *Caller, at *Handle, path string, op XattrOp, size int) ([]byte, int, error) {
	type res struct {
		b []byte
		n int
	}
	r, err := with(v, c, at, path, followFinal.If(!op.NoFollow)|emptyPathOK.If(op.EmptyAt),
		func(hat *Handle, hp string) (res, error) {
			b, n, err := v.host.Listxattr(c, hat, hp, op, size)
			return res{b, n}, err
		},
		func(t target) (res, error) {
			if t.node == nil {
				return res{}, unix.ENOENT
			}
			if err := v.readAttrsLocked(t.node); err != nil {
				return res{}, err
			}
			buf := make([]byte, 65536)
			n, err := unix.Llistxattr(v.backingPath(t.node), buf)
			if err != nil {
				return res{}, err
			}
			// Hide trusted.* from callers without CAP_SYS_ADMIN, as Linux.
			var out []byte
			for _, name := range strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00") {
				if name == "" || strings.HasPrefix(name, "trusted.") && !c.Cred.HasCap(unix.CAP_SYS_ADMIN) {
					continue
				}
				out = append(append(out, name...), 0)
			}
			if size == 0 {
				return res{nil, len(out)}, nil
			}
			if len(out) > size {
				return res{}, unix.ERANGE
			}
			return res{out, len(out)}, nil
		})
	return r.b, r.n, err
}

// Setxattr implements View. On a host original that keeps its identity at
// commit (a directory, a multiply-linked file) the change is journaled as
// its own redo record (journalXattrLocked).
func (v *Tx) Setxattr(c *Caller, at *Handle, path string, op XattrOp, name string, value []byte, flags int) error {
	// AttrMode: setting system.posix_acl_access sets the mode too (cp -a
	// gives a new directory its mode that way), and a setattr journaled
	// earlier must not bring the old mode back.
	return v.modify(c, at, path, followFinal.If(!op.NoFollow)|emptyPathOK.If(op.EmptyAt), store.AttrMode,
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
	return v.modify(c, at, path, followFinal.If(!op.NoFollow)|emptyPathOK.If(op.EmptyAt), store.AttrMode,
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
