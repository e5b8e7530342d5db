package vfs

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"txexec/proc"
)

// Caller is who a view acts for: one thread's credentials and file-system
// context, sampled at the start of the call.
type Caller struct {
	Tid, Tgid int
	Cred      *proc.Cred
	Cwd, Root *Handle
	Umask     uint32
	// Call, if set, is the served call's, for what a view asks of it
	// beyond the caller's identity.
	Call CallHooks
}

// CallHooks are what a view asks of the call it serves (interpose.Call
// implements them).
type CallHooks interface {
	// SettleReplies waits until descriptors the tree closed are closed
	// for the kernel too (see interpose.Call.SettleReplies): before an
	// open of a FIFO, whose outcome depends on the ends that are open.
	SettleReplies()
	// WillWait says the call is about to wait for another process (a
	// FIFO's other end): the rest of the tree is served meanwhile.
	WillWait()
}

// settle runs c.Call.SettleReplies if there is a call.
func (c *Caller) settle() {
	if c.Call != nil {
		c.Call.SettleReplies()
	}
}

// willWait runs c.Call.WillWait if there is a call.
func (c *Caller) willWait() {
	if c.Call != nil {
		c.Call.WillWait()
	}
}

// Handle is a view's reference to an object a process holds by descriptor
// or as its cwd or root. fd is a supervisor descriptor on the backing
// object; node, in a transactional view, is the object in the view.
type Handle struct {
	refs atomic.Int32
	fd   int
	node *Node
	// isRoot marks the host's own root directory (no chroot).
	isRoot bool
}

// NewHandle wraps a supervisor descriptor; the handle owns it.
func NewHandle(fd int, n *Node) *Handle {
	h := &Handle{fd: fd, node: n}
	h.refs.Store(1)
	return h
}

// Retain implements proc.Dir.
func (h *Handle) Retain() proc.Dir { h.refs.Add(1); return h }

// Release implements proc.Dir.
func (h *Handle) Release() {
	if h.refs.Add(-1) == 0 && h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}

// FD is the supervisor's descriptor on the backing object.
func (h *Handle) FD() int { return h.fd }

var _ proc.Dir = (*Handle)(nil)

// OpenHow is open's and openat2's arguments.
type OpenHow struct {
	Flags   uint64
	Mode    uint32
	Resolve uint64
}

// XattrOp selects the object of an xattr call: by path following the final
// symlink, by path not following it (l*), or by descriptor (f*, path "").
type XattrOp struct {
	NoFollow bool
	EmptyAt  bool
}

// View is a file-system namespace as seen by supervised processes: the host
// itself (--passthrough, and processes outside any transaction) or a
// transaction's private view. Every method does the permission checks of
// the caller's credentials and returns Linux's errno on failure.
// Paths are as the caller passed them; at is the directory relative paths
// start from (the caller's cwd, or a dirfd's handle).
type View interface {
	// HandleOf turns a descriptor duplicated from the caller (pidfd_getfd)
	// into a handle; the handle owns fd.
	HandleOf(c *Caller, fd int) (*Handle, error)
	// LockTarget says what else an advisory lock through fd (a
	// descriptor duplicated from the caller) concerns: see LockTarget.
	LockTarget(fd int) (LockTarget, error)
	// LockCopy opens, for a lock through fd (a descriptor duplicated from
	// the caller) on an unchanged host original, the file's staged copy
	// instead: see Tx.LockCopy.
	LockCopy(fd int, copyUp bool) (int, error)
	// Cwd opens the directory the supervisor starts the command in.
	OpenDir(path string) (*Handle, error)
	// DirPath is the absolute path in this view, from the real root, of
	// directory handle d (a cwd or root): how a thread's context moves
	// to another view (OpenDir there) when it begins, pauses or ends a
	// transaction of its own. ENOENT when d was removed.
	DirPath(d *Handle) (string, error)

	Open(c *Caller, at *Handle, path string, how OpenHow) (fd int, err error)
	Stat(c *Caller, at *Handle, path string, flags int) (unix.Stat_t, error)
	Statx(c *Caller, at *Handle, path string, flags int, mask uint32) (unix.Statx_t, error)
	Access(c *Caller, at *Handle, path string, mode uint32, flags int) error
	Readlink(c *Caller, at *Handle, path string) (string, error)
	Mkdir(c *Caller, at *Handle, path string, mode uint32) error
	Mknod(c *Caller, at *Handle, path string, mode uint32, dev uint64) error
	Unlink(c *Caller, at *Handle, path string, flags int) error
	Rename(c *Caller, oldAt *Handle, oldPath string, newAt *Handle, newPath string, flags uint) error
	Link(c *Caller, oldAt *Handle, oldPath string, newAt *Handle, newPath string, flags int) error
	Symlink(c *Caller, target string, at *Handle, path string) error
	Chmod(c *Caller, at *Handle, path string, mode uint32, flags int) error
	Chown(c *Caller, at *Handle, path string, uid, gid uint32, flags int) error
	Utimens(c *Caller, at *Handle, path string, ts *[2]unix.Timespec, flags int) error
	Truncate(c *Caller, at *Handle, path string, size int64) error
	Chdir(c *Caller, at *Handle, path string, flags int) (*Handle, error)
	Chroot(c *Caller, at *Handle, path string) (*Handle, error)
	Getcwd(c *Caller) (string, error)
	Statfs(c *Caller, at *Handle, path string) (unix.Statfs_t, error)
	Getxattr(c *Caller, at *Handle, path string, op XattrOp, name string, size int) ([]byte, int, error)
	Setxattr(c *Caller, at *Handle, path string, op XattrOp, name string, value []byte, flags int) error
	Listxattr(c *Caller, at *Handle, path string, op XattrOp, size int) ([]byte, int, error)
	Removexattr(c *Caller, at *Handle, path string, op XattrOp, name string) error
	// Executable finds the file an execve of path would run, checking
	// that the caller may execute it. flags are execveat's.
	Executable(c *Caller, at *Handle, path string, flags int) (Exe, error)
	// Listing returns the merged entries of a directory whose listing the
	// view changed, or ok=false when the kernel's own listing of the
	// descriptor is right (getdents then runs natively). The entries may be
	// shared with later calls: callers must not modify them.
	Listing(c *Caller, dir *Handle) (ents []Dirent, ok bool, err error)
	// BindUnix binds socket sock (a supervisor descriptor) to an AF_UNIX
	// path; BindAddr to any other address, given as the caller's bytes.
	BindUnix(c *Caller, at *Handle, path string, sock int) error
	BindAddr(c *Caller, sock int, addr []byte) error
	// ChangeInodeAttrs carries out an ioctl that changes the inode
	// attributes of the object the caller's descriptor at refers to
	// (chattr's flags, fsxattr, generation).
	ChangeInodeAttrs(c *Caller, at *Handle, ch InodeAttrChange) error
}

// Dirent is one directory entry of a merged listing.
type Dirent struct {
	// Off is the entry's cookie (d_off): listings are sorted by it, and a
	// reader resumes after the cookie it last saw, so entries removed or
	// added meanwhile never make it skip or repeat others.
	Off  uint64
	Name string
	Ino  uint64
	Type uint8 // DT_*
}

// Exe is a file about to be executed.
type Exe struct {
	// Path is the host path of the backing file, for the kernel; empty when
	// no path reaches it (a memfd, or an unlinked file reached through a
	// descriptor): the caller then names it by its own descriptor.
	Path string
	// FD is a readable supervisor descriptor on it; the receiver closes it.
	FD int
	// Dev and Ino identify it.
	Dev, Ino uint64
}
