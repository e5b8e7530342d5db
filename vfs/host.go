package vfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
)

// Host is the view of processes outside any transaction, and of
// --passthrough: the host file system itself. Each call runs in the kernel
// on the supervisor's worker thread under the caller's file-system
// credentials (sysx.Self.AsCaller), relative to supervisor descriptors for
// the caller's cwd and dirfds — so every permission decision, symlink and
// ".." is the kernel's own.
type Host struct {
	self *sysx.Self
	// tokens stand for the O_PATH descriptors it hands out as pipes.
	tokens hostTokens
}

// NewHost makes the host view.
func NewHost() (*Host, error) {
	s, err := sysx.ReadSelf()
	if err != nil {
		return nil, fmt.Errorf("read supervisor credentials: %w", err)
	}
	return &Host{self: s}, nil
}

var _ View = (*Host)(nil)

func (h *Host) as(c *Caller, fn func() error) error {
	cred := c.Cred.FS()
	return h.self.AsCaller(&cred, fn)
}

// OpenDir implements View.
func (h *Host) OpenDir(path string) (*Handle, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	d := NewHandle(fd, nil)
	d.isRoot = path == "/"
	return d, nil
}

// HandleOf implements View. A path token (hostTokens) stands for its
// object.
func (h *Host) HandleOf(c *Caller, fd int) (*Handle, error) {
	if obj := h.tokens.objectOf(fd); obj >= 0 {
		unix.Close(fd)
		return NewHandle(obj, nil), nil
	}
	return NewHandle(fd, nil), nil
}

// hostPath turns the caller's (at, path) into a (dirfd, path) pair the
// supervisor can hand to the kernel:
//   - "/proc/self", "/proc/thread-self", "/dev/fd", "/dev/std{in,out,err}"
//     name the *caller's* process, not the supervisor's;
//   - absolute paths start at the caller's root.
//
// followFinal says whether the call follows a final symlink (a final
// /dev/stdin that is not followed is the symlink itself).
func hostPath(c *Caller, at *Handle, path string, followFinal bool) (int, string) {
	if !strings.HasPrefix(path, "/") {
		return at.fd, path
	}
	path = procSelf(c, path, followFinal)
	if c.Root != nil && c.Root.node == nil && !c.Root.isRoot {
		return c.Root.fd, "." + path
	}
	return unix.AT_FDCWD, path
}

// procSelf rewrites the paths that name "the calling process" textually.
// It covers the spellings programs use (shells open /dev/fd/N for process
// substitution, /dev/stdin for "-"); a symlink elsewhere that points into
// /proc/self is resolved by the kernel for the supervisor (docs/semantics.md).
func procSelf(c *Caller, path string, followFinal bool) string {
	tg := strconv.Itoa(c.Tgid)
	type rw struct{ from, to string }
	for _, r := range []rw{
		{"/proc/self", "/proc/" + tg},
		{"/proc/thread-self", "/proc/" + tg + "/task/" + strconv.Itoa(c.Tid)},
		{"/dev/fd", "/proc/" + tg + "/fd"},
		{"/dev/stdin", "/proc/" + tg + "/fd/0"},
		{"/dev/stdout", "/proc/" + tg + "/fd/1"},
		{"/dev/stderr", "/proc/" + tg + "/fd/2"},
	} {
		if rest, ok := strings.CutPrefix(path, r.from); ok {
			if rest == "" && !followFinal {
				return path
			}
			if rest == "" || rest[0] == '/' {
				return r.to + rest
			}
		}
	}
	return path
}

// emptyPath handles AT_EMPTY_PATH: the object is at itself.
func emptyPath(path string, flags int) (bool, error) {
	if path != "" {
		return false, nil
	}
	if flags&unix.AT_EMPTY_PATH == 0 {
		return false, unix.ENOENT
	}
	return true, nil
}

// Open implements View.
func (h *Host) Open(c *Caller, at *Handle, path string, how OpenHow) (int, error) {
	if path == "" {
		return -1, unix.ENOENT
	}
	// The descriptor is the caller's: its close-on-exec bit is set by
	// ADDFD; ours is always close-on-exec. O_NOCTTY: the supervisor must
	// never acquire a controlling terminal.
	how.Flags = how.Flags&^unix.O_CLOEXEC | unix.O_CLOEXEC | unix.O_NOCTTY
	if how.Flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode &^= c.Umask
	}
	dirfd, p := hostPath(c, at, path, how.Flags&unix.O_NOFOLLOW == 0)
	if how.Resolve&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) != 0 {
		// A scoped walk starts at dirfd even for an absolute path
		// (RESOLVE_IN_ROOT) or refuses it (RESOLVE_BENEATH): the kernel
		// must see the caller's dirfd and the path as given.
		dirfd, p = at.fd, path
	}
	if how.Flags&unix.O_PATH != 0 {
		return h.openPath(c, dirfd, p, how)
	}
	var fd int
	err := h.as(c, func() error {
		return sysx.Retry(func() (err error) {
			if how.Resolve != 0 {
				fd, err = unix.Openat2(dirfd, p, &unix.OpenHow{Flags: how.Flags, Mode: uint64(how.Mode), Resolve: how.Resolve})
			} else {
				fd, err = unix.Openat(dirfd, p, int(how.Flags), how.Mode)
			}
			return err
		})
	})
	return fd, err
}

// openPath serves O_PATH as the transactional view does (see
// Tx.openPathLocked): ADDFD cannot install O_PATH descriptors, so the
// caller gets a read-only descriptor on a directory or regular file it may
// read, and a path token (hostTokens) for anything else: a symlink (with
// O_NOFOLLOW), a device or socket, an object it may not read. A FIFO is
// opened for reading without blocking, as before tokens existed.
func (h *Host) openPath(c *Caller, dirfd int, p string, how OpenHow) (int, error) {
	var fd int
	err := h.as(c, func() error {
		pfd, err := unix.Openat(dirfd, p, int(how.Flags&(unix.O_NOFOLLOW|unix.O_DIRECTORY))|unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			unix.Close(pfd)
			return err
		}
		flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO:
			flags |= unix.O_NONBLOCK
		case unix.S_IFDIR, unix.S_IFREG:
		default:
			fd, err = h.tokens.add(pfd)
			return err
		}
		fd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), flags, 0)
		if err == unix.EACCES || err == unix.EPERM {
			fd, err = h.tokens.add(pfd)
			return err
		}
		unix.Close(pfd)
		return err
	})
	return fd, err
}

// Stat implements View.
func (h *Host) Stat(c *Caller, at *Handle, path string, flags int) (st unix.Stat_t, err error) {
	if empty, err := emptyPath(path, flags); err != nil {
		return st, err
	} else if empty {
		return st, unix.Fstat(at.fd, &st)
	}
	dirfd, p := hostPath(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	err = h.as(c, func() error { return unix.Fstatat(dirfd, p, &st, flags) })
	return st, err
}

// Statx implements View.
func (h *Host) Statx(c *Caller, at *Handle, path string, flags int, mask uint32) (stx unix.Statx_t, err error) {
	dirfd, p := at.fd, path
	if path != "" {
		dirfd, p = hostPath(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	} else if flags&unix.AT_EMPTY_PATH == 0 {
		return stx, unix.ENOENT
	}
	err = h.as(c, func() error { return unix.Statx(dirfd, p, flags, int(mask), &stx) })
	return stx, err
}

// Access implements View. access(2) checks with the *real* ids unless
// AT_EACCESS; the kernel would use our (root) real ids, so the check runs
// with AT_EACCESS under credentials chosen here.
func (h *Host) Access(c *Caller, at *Handle, path string, mode uint32, flags int) error {
	dirfd, p := hostPath(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	if path == "" {
		if flags&unix.AT_EMPTY_PATH == 0 {
			return unix.ENOENT
		}
		dirfd = at.fd
	}
	cred := c.Cred.FS()
	if flags&unix.AT_EACCESS == 0 {
		cred = accessCred(c.Cred).FS()
	}
	return h.self.AsCaller(&cred, func() error {
		return unix.Faccessat2(dirfd, p, mode, flags|unix.AT_EACCESS)
	})
}

// Readlink implements View.
func (h *Host) Readlink(c *Caller, at *Handle, path string) (string, error) {
	var target string
	dirfd, p := at.fd, path
	if path != "" {
		dirfd, p = hostPath(c, at, path, false)
	}
	err := h.as(c, func() error {
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dirfd, p, buf)
		if err != nil {
			return err
		}
		target = string(buf[:n])
		return nil
	})
	return target, err
}

// Mkdir implements View.
func (h *Host) Mkdir(c *Caller, at *Handle, path string, mode uint32) error {
	dirfd, p := hostPath(c, at, path, false)
	return h.as(c, func() error { return unix.Mkdirat(dirfd, p, mode&^c.Umask&0o7777) })
}

// Mknod implements View.
func (h *Host) Mknod(c *Caller, at *Handle, path string, mode uint32, dev uint64) error {
	dirfd, p := hostPath(c, at, path, false)
	if mode&unix.S_IFMT != unix.S_IFDIR {
		mode = mode&unix.S_IFMT | mode&^unix.S_IFMT&^c.Umask
	}
	return h.as(c, func() error { return unix.Mknodat(dirfd, p, mode, int(dev)) })
}

// Unlink implements View.
func (h *Host) Unlink(c *Caller, at *Handle, path string, flags int) error {
	dirfd, p := hostPath(c, at, path, false)
	return h.as(c, func() error { return unix.Unlinkat(dirfd, p, flags) })
}

// Rename implements View.
func (h *Host) Rename(c *Caller, oldAt *Handle, oldPath string, newAt *Handle, newPath string, flags uint) error {
	od, op := hostPath(c, oldAt, oldPath, false)
	nd, np := hostPath(c, newAt, newPath, false)
	return h.as(c, func() error { return unix.Renameat2(od, op, nd, np, flags) })
}

// Link implements View.
func (h *Host) Link(c *Caller, oldAt *Handle, oldPath string, newAt *Handle, newPath string, flags int) error {
	od, op := oldAt.fd, oldPath
	if oldPath != "" {
		od, op = hostPath(c, oldAt, oldPath, flags&unix.AT_SYMLINK_FOLLOW != 0)
	}
	nd, np := hostPath(c, newAt, newPath, false)
	return h.as(c, func() error { return unix.Linkat(od, op, nd, np, flags) })
}

// Symlink implements View.
func (h *Host) Symlink(c *Caller, target string, at *Handle, path string) error {
	dirfd, p := hostPath(c, at, path, false)
	return h.as(c, func() error { return unix.Symlinkat(target, dirfd, p) })
}

// Chmod implements View.
func (h *Host) Chmod(c *Caller, at *Handle, path string, mode uint32, flags int) error {
	if empty, err := emptyPath(path, flags); err != nil {
		return err
	} else if empty {
		return h.as(c, func() error { return unix.Fchmod(at.fd, mode) })
	}
	dirfd, p := hostPath(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	return h.as(c, func() error { return unix.Fchmodat(dirfd, p, mode, flags&unix.AT_SYMLINK_NOFOLLOW) })
}

// Chown implements View.
func (h *Host) Chown(c *Caller, at *Handle, path string, uid, gid uint32, flags int) error {
	dirfd, p := at.fd, path
	if path != "" {
		dirfd, p = hostPath(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	} else if flags&unix.AT_EMPTY_PATH == 0 {
		return unix.ENOENT
	}
	return h.as(c, func() error { return unix.Fchownat(dirfd, p, int(int32(uid)), int(int32(gid)), flags) })
}

// Utimens implements View. A nil path (futimens) is at itself.
func (h *Host) Utimens(c *Caller, at *Handle, path string, ts *[2]unix.Timespec, flags int) error {
	dirfd, p := at.fd, path
	if path != "" {
		dirfd, p = hostPath(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	} else {
		// utimensat(fd, NULL, ...) is futimens: the kernel takes no flags
		// in that form.
		flags = 0
	}
	var tp unsafe.Pointer
	if ts != nil {
		tp = unsafe.Pointer(&ts[0])
	}
	return h.as(c, func() error { return utimensat(dirfd, p, tp, flags) })
}

// utimensat calls the raw system call: a NULL path means "dirfd itself",
// which unix.UtimesNanoAt cannot express.
func utimensat(dirfd int, path string, times unsafe.Pointer, flags int) error {
	var pp *byte
	if path != "" {
		var err error
		if pp, err = unix.BytePtrFromString(path); err != nil {
			return err
		}
	}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(dirfd), uintptr(unsafe.Pointer(pp)), uintptr(times), uintptr(flags), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// viaFD names (dirfd, path) as one path through the supervisor's
// /proc/self/fd, for the calls that have no *at form.
func viaFD(dirfd int, path string) string {
	if dirfd == unix.AT_FDCWD || strings.HasPrefix(path, "/") {
		return path
	}
	if path == "" {
		return "/proc/self/fd/" + strconv.Itoa(dirfd)
	}
	return "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + path
}

// Truncate implements View.
func (h *Host) Truncate(c *Caller, at *Handle, path string, size int64) error {
	dirfd, p := hostPath(c, at, path, true)
	return h.as(c, func() error { return unix.Truncate(viaFD(dirfd, p), size) })
}

// Chdir implements View: the directory must be searchable by the caller.
func (h *Host) Chdir(c *Caller, at *Handle, path string, flags int) (*Handle, error) {
	var fd int
	err := h.as(c, func() error {
		var err error
		if path == "" && flags&unix.AT_EMPTY_PATH != 0 {
			fd, err = unix.Openat(at.fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		} else {
			dirfd, p := hostPath(c, at, path, true)
			if p == "" {
				return unix.ENOENT
			}
			fd, err = unix.Openat(dirfd, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return err
		}
		if err := unix.Faccessat2(fd, "", unix.X_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return NewHandle(fd, nil), nil
}

// Chroot implements View.
func (h *Host) Chroot(c *Caller, at *Handle, path string) (*Handle, error) {
	if !c.Cred.HasCap(unix.CAP_SYS_CHROOT) {
		return nil, unix.EPERM
	}
	return h.Chdir(c, at, path, 0)
}

// DirPath implements View.
func (h *Host) DirPath(d *Handle) (string, error) {
	if d.isRoot {
		return "/", nil
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(d.fd))
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
		return "", unix.ENOENT
	}
	return p, nil
}

// Getcwd implements View.
func (h *Host) Getcwd(c *Caller) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(c.Cwd.fd))
	if err != nil {
		return "", unix.ENOENT
	}
	if strings.HasSuffix(p, " (deleted)") {
		return "", unix.ENOENT
	}
	if c.Root != nil && !c.Root.isRoot {
		r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(c.Root.fd))
		if err == nil {
			if rest, ok := strings.CutPrefix(p, r); ok && (rest == "" || rest[0] == '/') {
				if rest == "" {
					rest = "/"
				}
				return rest, nil
			}
			return "(unreachable)" + p, nil
		}
	}
	return p, nil
}

// Statfs implements View.
func (h *Host) Statfs(c *Caller, at *Handle, path string) (st unix.Statfs_t, err error) {
	dirfd, p := hostPath(c, at, path, true)
	err = h.as(c, func() error { return unix.Statfs(viaFD(dirfd, p), &st) })
	return st, err
}

func (h *Host) xattrPath(c *Caller, at *Handle, path string, op XattrOp) string {
	if op.EmptyAt {
		return viaFD(at.fd, "")
	}
	dirfd, p := hostPath(c, at, path, !op.NoFollow)
	return viaFD(dirfd, p)
}

// Getxattr implements View. It returns the value (at most size bytes; size
// 0 asks only for the length) and the length.
func (h *Host) Getxattr(c *Caller, at *Handle, path string, op XattrOp, name string, size int) ([]byte, int, error) {
	p := h.xattrPath(c, at, path, op)
	buf := make([]byte, size)
	var n int
	err := h.as(c, func() (err error) {
		if op.NoFollow {
			n, err = unix.Lgetxattr(p, name, buf)
		} else {
			n, err = unix.Getxattr(p, name, buf)
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	if size == 0 {
		return nil, n, nil
	}
	return buf[:n], n, nil
}

// Setxattr implements View.
func (h *Host) Setxattr(c *Caller, at *Handle, path string, op XattrOp, name string, value []byte, flags int) error {
	p := h.xattrPath(c, at, path, op)
	return h.as(c, func() error {
		if op.NoFollow {
			return unix.Lsetxattr(p, name, value, flags)
		}
		return unix.Setxattr(p, name, value, flags)
	})
}

// Listxattr implements View.
func (h *Host) Listxattr(c *Caller, at *Handle, path string, op XattrOp, size int) ([]byte, int, error) {
	p := h.xattrPath(c, at, path, op)
	buf := make([]byte, size)
	var n int
	err := h.as(c, func() (err error) {
		if op.NoFollow {
			n, err = unix.Llistxattr(p, buf)
		} else {
			n, err = unix.Listxattr(p, buf)
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	if size == 0 {
		return nil, n, nil
	}
	return buf[:n], n, nil
}

// Removexattr implements View.
func (h *Host) Removexattr(c *Caller, at *Handle, path string, op XattrOp, name string) error {
	p := h.xattrPath(c, at, path, op)
	return h.as(c, func() error {
		if op.NoFollow {
			return unix.Lremovexattr(p, name)
		}
		return unix.Removexattr(p, name)
	})
}

// Listing implements View: the host's listings are the kernel's own.
func (h *Host) Listing(c *Caller, dir *Handle) ([]Dirent, bool, error) { return nil, false, nil }

// Executable implements View.
func (h *Host) Executable(c *Caller, at *Handle, path string, flags int) (Exe, error) {
	var fd int
	err := h.as(c, func() error {
		var err error
		if path == "" {
			if flags&unix.AT_EMPTY_PATH == 0 {
				return unix.ENOENT
			}
			fd, err = unix.FcntlInt(uintptr(at.fd), unix.F_DUPFD_CLOEXEC, 0)
		} else {
			dirfd, p := hostPath(c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
			oflags := unix.O_PATH | unix.O_CLOEXEC
			if flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
				oflags |= unix.O_NOFOLLOW
			}
			fd, err = unix.Openat(dirfd, p, oflags, 0)
		}
		if err != nil {
			return err
		}
		// execve(2): EACCES unless a regular file with execute permission
		// on a mount without noexec.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return unix.EACCES
		}
		if err := unix.Faccessat2(fd, "", unix.X_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	if err != nil {
		return Exe{}, err
	}
	return exeOf(fd)
}

// exeOf turns an O_PATH descriptor into an Exe: its host path and a
// readable descriptor.
func exeOf(pathFD int) (Exe, error) {
	defer unix.Close(pathFD)
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(pathFD))
	if err != nil {
		return Exe{}, err
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pathFD), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Exe{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return Exe{}, err
	}
	// The kernel keeps a name for a memfd ("/memfd:N (deleted)") or an
	// unlinked file too; only a name that leads back to this very file is
	// one the kernel can execute.
	var pst unix.Stat_t
	if !strings.HasPrefix(p, "/") || unix.Stat(p, &pst) != nil || pst.Dev != st.Dev || pst.Ino != st.Ino {
		p = ""
	}
	return Exe{Path: p, FD: fd, Dev: st.Dev, Ino: st.Ino}, nil
}
