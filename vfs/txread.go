package vfs

import (
	"hash/fnv"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenDir implements View: a handle on a directory of the view, for the
// command's starting cwd and root.
func (v *Tx) OpenDir(path string) (*Handle, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if path == "/" {
		h := NewHandle(-1, v.root)
		h.isRoot = true
		return h, nil
	}
	root := &Caller{Cred: rootCred}
	r, err := v.walkLocked(root, v.root, path, true, &walkState{})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if r.pass {
		// In a passthrough subtree (a cwd in /dev/shm): the host's.
		return v.host.OpenDir(r.passPath)
	}
	if r.node == nil || !r.node.isDir() {
		return nil, &os.PathError{Op: "open", Path: path, Err: unix.ENOTDIR}
	}
	return NewHandle(-1, r.node), nil
}

// HandleOf implements View: a descriptor is known by the object it refers
// to (DESIGN §4.3); see nodeOfFDLocked.
func (v *Tx) HandleOf(c *Caller, fd int) (*Handle, error) {
	if obj := v.host.tokens.objectOf(fd); obj >= 0 {
		// A path token the host view made for an O_PATH open in a
		// passthrough subtree.
		unix.Close(fd)
		return NewHandle(obj, nil), nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return NewHandle(fd, v.nodeOfFDLocked(fd, &st)), nil
}

// nodeOfFDLocked returns the view object behind fd, a supervisor
// descriptor for the object a caller's descriptor refers to (st is its
// fstat), or nil if the host must serve it.
//
// A descriptor the view did not hand out — inherited from txexec's parent
// (`cd dir && txexec …` keeps no such descriptor, but `exec 3<dir` before
// txexec does) or received from an outside process — still refers to a
// host object the transaction may change: walking from it on the host would
// bypass the transaction. So it is looked up in the view by the path the
// kernel keeps for it, and taken as that object only if the path still
// names it. What remains for the host: descriptors into passthrough
// subtrees (where the host serves names anyway), the command's output files
// (SetOutputs), and descriptors whose object no path reaches any more
// (unlinked, or replaced since) — docs/semantics.md lists these.
//
// Preconditions: v.mu held.
func (v *Tx) nodeOfFDLocked(fd int, st *unix.Stat_t) *Node {
	if n := v.nodes[idOf(st)]; n != nil {
		return n
	}
	if v.outputs[idOf(st)] {
		// Written straight through inherited descriptors: outside the
		// transaction (SetOutputs), so served by the host too — a staged
		// copy would lose those writes at commit.
		return nil
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
		return nil // a pipe, socket or anonymous inode; or unlinked
	}
	r, err := v.walkLocked(&Caller{Cred: rootCred}, v.root, p, false, &walkState{})
	if err != nil || r.pass || r.node == nil || !r.node.isHostObject(st) {
		return nil
	}
	return r.node
}

// Stat implements View.
func (v *Tx) Stat(c *Caller, at *Handle, path string, flags int) (unix.Stat_t, error) {
	return with(v, c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0,
		func(hat *Handle, hp string) (unix.Stat_t, error) { return v.host.Stat(c, hat, hp, flags) },
		func(t target) (unix.Stat_t, error) {
			if t.node == nil {
				return unix.Stat_t{}, unix.ENOENT
			}
			return v.statAsLocked(t.node, statGranules(at, path, flags, t.node))
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
	return with(v, c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0,
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
				err = unix.Statx(n.area.fd, n.staged, unix.AT_SYMLINK_NOFOLLOW, m, &stx)
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
			stx.Size, stx.Blocks = uint64(st.Size), uint64(st.Blocks)
			stx.Mtime = unix.StatxTimestamp{Sec: st.Mtim.Sec, Nsec: uint32(st.Mtim.Nsec)}
			stx.Ctime = unix.StatxTimestamp{Sec: st.Ctim.Sec, Nsec: uint32(st.Ctim.Nsec)}
			return stx, nil
		})
}

// Access implements View. access(2) checks with the real ids unless
// AT_EACCESS (accessCred).
func (v *Tx) Access(c *Caller, at *Handle, path string, mode uint32, flags int) error {
	return withErr(v, c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0,
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

// Readlink implements View.
func (v *Tx) Readlink(c *Caller, at *Handle, path string) (string, error) {
	return with(v, c, at, path, false, true,
		func(hat *Handle, hp string) (string, error) {
			if p, ok := v.procLink(c, hp); ok {
				return p, nil
			}
			return v.host.Readlink(c, hat, hp)
		},
		func(t target) (string, error) {
			if t.node == nil {
				return "", unix.ENOENT
			}
			if t.node.typ != unix.S_IFLNK {
				// do_readlinkat: an empty path names the descriptor
				// itself, which is no symlink: ENOENT, not EINVAL.
				if path == "" {
					return "", unix.ENOENT
				}
				return "", unix.EINVAL
			}
			return v.readlinkLocked(t.node)
		})
}

// procLink answers readlink of the caller's own /proc magic links — cwd,
// root, exe and fd/N of /proc/self, /proc/thread-self and /proc/TGID — with the
// view's paths (the kernel knows only the backing objects: the staging
// area, and a cwd it never changed).
func (v *Tx) procLink(c *Caller, hp string) (string, bool) {
	tg := strconv.Itoa(c.Tgid)
	var rest string
	found := false
	for _, prefix := range []string{"/proc/self/", "/proc/thread-self/", "/proc/" + tg + "/", "/proc/" + tg + "/task/" + strconv.Itoa(c.Tid) + "/"} {
		if r, ok := strings.CutPrefix(hp, prefix); ok {
			rest, found = r, true
			break
		}
	}
	if !found {
		return "", false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	var n *Node
	switch {
	case rest == "cwd":
		n = c.Cwd.node
	case rest == "root":
		n = v.rootOf(c)
	case strings.HasPrefix(rest, "fd/"):
		fd, err := strconv.Atoi(rest[3:])
		if err != nil {
			return "", false
		}
		n = v.nodeOfCallerFDLocked(c, fd)
	case rest == "exe":
		// The program the kernel runs is the backing file exec was
		// given (a staged object's path in the staging area).
		var st unix.Stat_t
		if unix.Stat("/proc/"+strconv.Itoa(c.Tid)+"/exe", &st) != nil {
			return "", false
		}
		n = v.nodes[idOf(&st)]
		if n != nil && n.staged == "" && !n.anon {
			return "", false // a host original: the kernel's answer is right
		}
	}
	if n == nil {
		return "", false
	}
	if n.isDir() {
		p, deleted := v.dirPathLocked(c, n)
		if deleted {
			p += " (deleted)"
		}
		return p, true
	}
	switch {
	case n.anon && n.tmpDir != nil:
		p, _ := v.dirPathLocked(c, n.tmpDir)
		return joinPath(p, "#"+strconv.FormatUint(n.stagedID.Ino, 10)) + " (deleted)", true
	case n.locDir != nil:
		p, deleted := v.dirPathLocked(c, n.locDir)
		p = joinPath(p, n.locName)
		if deleted || !n.locDir.entryIs(n.locName, n) {
			p += " (deleted)"
		}
		return p, true
	}
	return "", false
}

func joinPath(dir, name string) string { return childPath(dir, name) }

// Getcwd implements View.
func (v *Tx) Getcwd(c *Caller) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := c.Cwd.node
	if n == nil {
		return v.host.Getcwd(c)
	}
	p, deleted := v.dirPathLocked(c, n)
	if deleted {
		return "", unix.ENOENT
	}
	return p, nil
}

// dirPathLocked is directory n's path as c sees it (Linux's d_path): from
// c's root, "(unreachable)" before it when n is outside that root; deleted
// when n was removed, its path then being the one it had.
//
// Preconditions: v.mu held.
func (v *Tx) dirPathLocked(c *Caller, n *Node) (string, bool) {
	root := v.rootOf(c)
	var parts []string
	deleted := false
	for cur := n; cur != root; {
		parent := cur.parent
		if cur.removed {
			deleted, parent = true, cur.removedFrom
		}
		if parent == nil {
			return "(unreachable)" + n.viewPathLocked(), deleted
		}
		parts = append(parts, cur.name)
		cur = parent
	}
	if len(parts) == 0 {
		return "/", deleted
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return "/" + strings.Join(parts, "/"), deleted
}

// Chdir implements View.
func (v *Tx) Chdir(c *Caller, at *Handle, path string, flags int) (*Handle, error) {
	return with(v, c, at, path, true, flags&unix.AT_EMPTY_PATH != 0,
		func(hat *Handle, hp string) (*Handle, error) { return v.host.Chdir(c, hat, hp, flags) },
		func(t target) (*Handle, error) {
			if t.node == nil {
				return nil, unix.ENOENT
			}
			if !t.node.isDir() {
				return nil, unix.ENOTDIR
			}
			a, err := v.attrsLocked(t.node)
			if err != nil {
				return nil, err
			}
			if err := permission(c, a, mayExec); err != nil {
				return nil, err
			}
			return NewHandle(-1, t.node), nil
		})
}

// Chroot implements View.
func (v *Tx) Chroot(c *Caller, at *Handle, path string) (*Handle, error) {
	if !c.Cred.HasCap(unix.CAP_SYS_CHROOT) {
		return nil, unix.EPERM
	}
	h, err := v.Chdir(c, at, path, 0)
	if err == nil && h.node == nil {
		h.Release()
		return nil, unix.EPERM // a root inside a passthrough subtree
	}
	return h, err
}

// Statfs implements View.
func (v *Tx) Statfs(c *Caller, at *Handle, path string) (unix.Statfs_t, error) {
	return with(v, c, at, path, true, false,
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

// openHostOriginal opens a host object read-only. O_NOATIME needs
// ownership or CAP_FOWNER, which an unprivileged supervisor lacks for
// others' files: without it the read sets atime as the caller's own read
// would (docs/semantics.md).
func openHostOriginal(dirfd int, name string, flags int) (int, error) {
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err == unix.EPERM && flags&unix.O_NOATIME != 0 {
		fd, err = unix.Openat(dirfd, name, flags&^unix.O_NOATIME, 0)
	}
	return fd, err
}

// openHostObject opens host original n as name in dirfd (read-only) and
// checks it is still the object the view found: any failure means the host
// changed it since (ELOOP: a symlink now stands there), which dooms the
// transaction.
// Its attributes, read for that check, are left in *st.
func (v *Tx) openHostObject(n *Node, dirfd int, name string, flags int, st *unix.Stat_t) (int, error) {
	fd, err := openHostOriginal(dirfd, name, flags)
	if err != nil {
		return -1, v.hostChanged(n.hostPath, err)
	}
	if unix.Fstat(fd, st) != nil || !n.isHostObject(st) {
		unix.Close(fd)
		return -1, v.hostChanged(n.hostPath, unix.ESTALE)
	}
	return fd, nil
}

// openBackingLocked opens n's backing object (never writable for a host
// original).
func (v *Tx) openBackingLocked(n *Node, flags int) (int, error) {
	var st unix.Stat_t
	fd, _, err := v.openBackingStatLocked(n, flags, &st)
	return fd, err
}

// openBackingStatLocked is openBackingLocked that also reports whether it
// read the opened object's attributes, into *st: it does for a host
// original that is not a directory, whose identity it checks.
func (v *Tx) openBackingStatLocked(n *Node, flags int, st *unix.Stat_t) (int, bool, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NOFOLLOW
	var fd int
	var err error
	switch {
	case n.anon:
		fd, err = reopenSpecial(n.anonFd, flags&^unix.O_NOFOLLOW)
	case n.hostFd >= 0:
		// A host directory, even one with a staged copy of its
		// attributes: its entries are the host's (DESIGN §4.2: names are
		// virtual; getdents of it is merged when the view changed them).
		fd, err = openHostOriginal(n.hostFd, ".", flags&^unix.O_NOFOLLOW)
	case n.staged != "":
		fd, err = unix.Openat(n.area.fd, n.staged, flags, 0)
	case n.hostParent != nil:
		if flags&unix.O_ACCMODE != unix.O_RDONLY {
			panic("vfs: host original opened writable")
		}
		fd, err = v.openHostObject(n, n.hostParent.hostFd, n.hostName, flags, st)
		if err != nil {
			return -1, false, err
		}
		return fd, true, nil
	default:
		return -1, false, unix.ESTALE
	}
	if err != nil {
		return -1, false, err
	}
	return fd, false, nil
}

// Getxattr implements View.
func (v *Tx) Getxattr(c *Caller, at *Handle, path string, op XattrOp, name string, size int) ([]byte, int, error) {
	type res struct {
		b []byte
		n int
	}
	r, err := with(v, c, at, path, !op.NoFollow, op.EmptyAt,
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
	r, err := with(v, c, at, path, !op.NoFollow, op.EmptyAt,
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

// Listing implements View: the entries of a directory of the view — its
// host entries as the transaction first read them, less whiteouts, plus
// the entries it made. Every directory of the view is listed this way,
// changed or not: a reader stays in one cookie space when the listing
// changes under it (readdir while deleting), and sees the inode numbers
// stat shows (a copied-up file has its staged object's). Only passthrough
// directories are listed by the kernel.
//
// Order and cookies: host entries keep the host's order (a program lists
// an unchanged directory as it would natively: tar and find write the same
// archive, the same output), with cookie i+1 for the i-th entry of the
// host listing, "." and ".." included; entries the transaction made follow,
// each with the next cookie when a listing first shows it. Cookies never
// move, so removals and additions never make a reader skip or repeat
// others (an entry added behind its position is not seen, as POSIX
// allows).
//
// The slice returned is shared (Tx.listed) and must not be modified.
func (v *Tx) Listing(c *Caller, dir *Handle) ([]Dirent, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := dir.node
	if n != nil && n.removed {
		// A removed directory lists nothing, not even "." and "..".
		return nil, true, nil
	}
	if n == nil || !n.isDir() || n.passthrough {
		return nil, false, nil
	}
	if v.listedDir == n && v.listedGen == v.gen {
		return v.listed, true, nil
	}
	ents, dot, dotdot, err := v.listLocked(n)
	if err != nil {
		return nil, false, err
	}
	self := n.viewIno()
	parent := self
	if n.parent != nil {
		parent = n.parent.viewIno()
	}
	out := append(ents, Dirent{Off: dot, Name: ".", Ino: self, Type: unix.DT_DIR},
		Dirent{Off: dotdot, Name: "..", Ino: parent, Type: unix.DT_DIR})
	sort.Slice(out, func(i, j int) bool { return out[i].Off < out[j].Off })
	v.listedDir, v.listed, v.listedGen = n, out, v.gen
	return out, true, nil
}

// listLocked returns a directory's entries in the view, without "." and
// "..", with their cookies (see Listing), and the cookies of "." and "..".
//
// Preconditions: v.mu held; n is a directory.
func (v *Tx) listLocked(n *Node) (ents []Dirent, dot, dotdot uint64, err error) {
	byName := map[string]Dirent{}
	dot, dotdot = 1, 2
	base := uint64(3)
	if !n.opaque && n.hostFd >= 0 {
		host, err := v.hostListLocked(n)
		if err != nil {
			return nil, 0, 0, err
		}
		for i, e := range host {
			e.Off = uint64(i + 1)
			switch e.Name {
			case ".":
				dot = e.Off
				continue
			case "..":
				dotdot = e.Off
				continue
			}
			if k := v.nodes[FileID{Dev: n.host.Dev, Ino: e.Ino}]; k != nil {
				e.Ino = k.viewIno()
			}
			byName[e.Name] = e
		}
		base = uint64(len(host) + 1)
	}
	var fresh []string
	for name, e := range n.entries {
		if e == nil {
			delete(byName, name)
			continue
		}
		d := Dirent{Name: name, Ino: e.viewIno(), Type: dtype(e.typ)}
		if old, ok := byName[name]; ok {
			d.Off = old.Off // recreated: the host name's place
		} else if off, ok := n.cookies[name]; ok {
			d.Off = off
		} else {
			fresh = append(fresh, name)
		}
		byName[name] = d
	}
	sort.Strings(fresh)
	for _, name := range fresh {
		if n.cookies == nil {
			n.cookies = map[string]uint64{}
		}
		d := byName[name]
		d.Off = base + uint64(len(n.cookies))
		n.cookies[name] = d.Off
		byName[name] = d
	}
	ents = make([]Dirent, 0, len(byName)+2)
	for _, e := range byName {
		ents = append(ents, e)
	}
	return ents, dot, dotdot, nil
}

func dtype(t uint32) uint8 {
	switch t {
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFLNK:
		return unix.DT_LNK
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	case unix.S_IFCHR:
		return unix.DT_CHR
	case unix.S_IFBLK:
		return unix.DT_BLK
	}
	return unix.DT_UNKNOWN
}

// readHostDir lists a host directory (without "." and "..").
func readHostDir(pathFd int) ([]Dirent, error) {
	all, err := readHostDirAll(pathFd)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, e := range all {
		if e.Name != "." && e.Name != ".." {
			out = append(out, e)
		}
	}
	return out, nil
}

// readHostDirAll lists a host directory in the kernel's order, "." and ".."
// included where the kernel puts them, staging areas left out (isAreaName).
func readHostDirAll(pathFd int) ([]Dirent, error) {
	fd, err := openHostOriginal(pathFd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOATIME)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []Dirent
	buf := make([]byte, 32768)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off < n; {
			reclen := int(uint16(buf[off+16]) | uint16(buf[off+17])<<8)
			ino := uint64(0)
			for i := 7; i >= 0; i-- {
				ino = ino<<8 | uint64(buf[off+i])
			}
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			if i := strings.IndexByte(string(name), 0); i >= 0 {
				name = name[:i]
			}
			if !isAreaName(string(name)) {
				out = append(out, Dirent{Name: string(name), Ino: ino, Type: typ})
			}
			off += reclen
		}
	}
}

// hostListLocked returns a host directory's entries as the transaction
// first read them ("." and ".." included), recording the listing in the
// read set.
//
// Preconditions: v.mu held; n is a host directory.
func (v *Tx) hostListLocked(n *Node) ([]Dirent, error) {
	if n.hostList != nil {
		return n.hostList, nil
	}
	ents, err := readHostDirAll(n.hostFd)
	if err != nil {
		return nil, err
	}
	if ents == nil {
		ents = []Dirent{}
	}
	if !n.passthrough {
		n.hostList = ents
		if n.hostPath != "" {
			var names []Dirent
			for _, e := range ents {
				if e.Name != "." && e.Name != ".." {
					names = append(names, e)
				}
			}
			r := v.reads[n.hostPath]
			r.exists, r.id, r.typ = true, n.host, n.typ
			r.listing, r.listingChecksum = true, listingChecksum(names)
			v.reads[n.hostPath] = r
		}
	}
	return ents, nil
}

func listingChecksum(ents []Dirent) uint64 {
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, s := range names {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Executable implements View.
func (v *Tx) Executable(c *Caller, at *Handle, path string, flags int) (Exe, error) {
	return with(v, c, at, path, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0,
		func(hat *Handle, hp string) (Exe, error) { return v.host.Executable(c, hat, hp, flags) },
		func(t target) (Exe, error) {
			n := t.node
			if n == nil {
				return Exe{}, unix.ENOENT
			}
			if n.typ == unix.S_IFLNK {
				return Exe{}, unix.ELOOP
			}
			if n.typ != unix.S_IFREG {
				return Exe{}, unix.EACCES
			}
			a, err := v.attrsLocked(n)
			if err != nil {
				return Exe{}, err
			}
			if err := permission(c, a, mayExec); err != nil {
				return Exe{}, err
			}
			fd, err := v.openBackingLocked(n, unix.O_RDONLY)
			if err != nil {
				return Exe{}, err
			}
			var sfs unix.Statfs_t
			if unix.Fstatfs(fd, &sfs) == nil && sfs.Flags&unix.ST_NOEXEC != 0 {
				unix.Close(fd)
				return Exe{}, unix.EACCES
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				return Exe{}, err
			}
			path := v.backingPath(n)
			if n.anon {
				// fexecve of an O_TMPFILE: the kernel needs a path to it,
				// a name in its staging area that the view never shows.
				name := "exec-" + v.newStagedNameLocked()
				if err := unix.Linkat(n.anonFd, "", n.area.fd, name, unix.AT_EMPTY_PATH); err != nil {
					unix.Close(fd)
					return Exe{}, err
				}
				path = n.area.pathOf(name)
			} else if n.staged == "" {
				// Its set-ID bits and file capabilities act as much as
				// its contents.
				v.recordReadLocked(n, &st, readData|readMeta)
			}
			return Exe{Path: path, FD: fd, Dev: st.Dev, Ino: st.Ino}, nil
		})
}
