package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks is Linux's limit on symlinks followed in one resolution.
const maxSymlinks = 40

// resolved is the outcome of a path walk.
type resolved struct {
	// dir is the directory holding the final entry, name its name; both
	// unset when the path ends in ".", ".." or is "/".
	dir  *Node
	name string
	// node is the final object, nil if absent.
	node *Node
	// slash: the path had a trailing slash (the object must be a directory).
	slash bool
	// pass: the path leads into a passthrough subtree; passPath is the
	// host path to hand to the host view.
	pass     bool
	passPath string
	// magic: the final object was reached through a /proc magic link.
	magic bool
}

// walkState is what one path resolution carries across the symlinks it
// follows: the count of links, and openat2's RESOLVE_* restrictions.
type walkState struct {
	links int
	// resolve are openat2's RESOLVE_* flags (0 for every other call).
	resolve uint64
	// scope is the root of a RESOLVE_BENEATH or RESOLVE_IN_ROOT walk: the
	// directory the walk started from.
	scope *Node
	// started is set once the walk began; later absolute paths are
	// symlink targets (nd_jump_root rather than path_init).
	started bool
	// parentOp: the call acts on the final name in its directory; a
	// trailing slash does not follow a final symlink (resolveParentLocked).
	parentOp bool
	// rootSet mirrors Linux's nd->root being set: by an absolute path, a
	// scoped walk or a "..". RESOLVE_NO_XDEV refuses an absolute symlink
	// while it is unset (the kernel compares against a NULL root mount).
	rootSet bool
}

func (ws *walkState) has(flag uint64) bool { return ws.resolve&flag != 0 }

// walkLocked resolves path for c from start (relative paths) or c's root
// (absolute ones), as Linux's path walk: search permission on every
// directory, "." and "..", symlinks (followed in the middle always, at the
// end when followFinal or the path ends in "/"), at most maxSymlinks, and
// openat2's RESOLVE_* restrictions.
//
// Preconditions: v.mu held.
func (v *Tx) walkLocked(c *Caller, start *Node, path string, followFinal bool, ws *walkState) (resolved, error) {
	if path == "" {
		return resolved{}, unix.ENOENT
	}
	root := v.rootOf(c)
	if ws.scope != nil {
		root = ws.scope
		ws.rootSet = true
	}
	cur := start
	if path[0] == '/' {
		if ws.started {
			// A symlink to an absolute path (nd_jump_root).
			if ws.has(unix.RESOLVE_BENEATH) {
				return resolved{}, unix.EXDEV
			}
			if ws.has(unix.RESOLVE_NO_XDEV) && (!ws.rootSet || v.mountOfLocked(cur) != v.mountOfLocked(root)) {
				return resolved{}, unix.EXDEV
			}
		} else if ws.has(unix.RESOLVE_BENEATH) {
			return resolved{}, unix.EXDEV
		}
		ws.rootSet = true
		cur = root
	}
	ws.started = true
	comps := splitPath(path)
	slash := strings.HasSuffix(path, "/")
	if len(comps) == 0 {
		return resolved{node: cur}, nil
	}
	for i, comp := range comps {
		last := i == len(comps)-1
		if !cur.isDir() {
			return resolved{}, unix.ENOTDIR
		}
		if cur.passthrough && comp != "." && comp != ".." {
			return v.passLocked(c, cur, comps[i:], slash, followFinal, ws)
		}
		a, err := v.attrsLocked(cur)
		if err != nil {
			return resolved{}, err
		}
		if err := permission(c, a, mayExec); err != nil {
			return resolved{}, err
		}
		switch comp {
		case ".":
			if last {
				return resolved{node: cur, slash: slash}, nil
			}
			continue
		case "..":
			ws.rootSet = true
			if cur == root {
				if ws.has(unix.RESOLVE_BENEATH) {
					return resolved{}, unix.EXDEV
				}
			} else if up := dotdotOf(cur); up != nil {
				if ws.has(unix.RESOLVE_NO_XDEV) && v.mountOfLocked(up) != v.mountOfLocked(cur) {
					return resolved{}, unix.EXDEV
				}
				cur = up
			}
			if last {
				return resolved{node: cur, slash: slash}, nil
			}
			continue
		}
		if err := checkName(comp); err != nil {
			return resolved{}, err
		}
		child, err := v.lookupLocked(cur, comp)
		if err == unix.ENOENT {
			if last {
				return resolved{dir: cur, name: comp, slash: slash}, nil
			}
			return resolved{}, unix.ENOENT
		}
		if err != nil {
			return resolved{}, err
		}
		if child.isDir() && ws.has(unix.RESOLVE_NO_XDEV) && v.mountOfLocked(child) != v.mountOfLocked(cur) {
			return resolved{}, unix.EXDEV
		}
		if child.typ == unix.S_IFLNK && (!last || followFinal || slash && !ws.parentOp) {
			if ws.has(unix.RESOLVE_NO_SYMLINKS) {
				return resolved{}, unix.ELOOP
			}
			ws.links++
			if ws.links > maxSymlinks {
				return resolved{}, unix.ELOOP
			}
			target, err := v.readlinkLocked(child)
			if err != nil {
				return resolved{}, err
			}
			rest := ""
			if !last {
				rest = strings.Join(comps[i+1:], "/")
			}
			if slash {
				rest += "/"
			}
			link := target
			if rest != "" {
				target = strings.TrimSuffix(target, "/") + "/" + rest
			}
			r, err := v.walkLocked(c, cur, target, followFinal, ws)
			if err == nil && ws.resolve == 0 && ws.scope == nil && root == v.root {
				v.noteFastLinkLocked(c, cur, child, comp, link, last)
			}
			return r, err
		}
		if child.isDir() {
			v.noteFastDirLocked(child)
		}
		if last {
			return resolved{dir: cur, name: comp, node: child, slash: slash}, nil
		}
		cur = child
	}
	return resolved{node: cur}, nil
}

// dotdotOf is the directory ".." of directory n leads to: its parent, or
// for a directory removed from the view (or renamed over) the one it was
// removed from — Linux keeps a removed dentry's parent, so a process in a
// removed directory gets back out with "cd ..".
func dotdotOf(n *Node) *Node {
	if n.removed {
		return n.removedFrom
	}
	return n.parent
}

// mountOfLocked identifies the mount a directory of the view is on: a host
// directory's own (the mount's root for a mount point), else that of the
// host directory it was made in (see hostDirOf: a directory made in the
// transaction is never a mount point).
//
// Preconditions: v.mu held; n is a directory.
func (v *Tx) mountOfLocked(n *Node) uint64 {
	d := hostDirOf(n)
	if d == nil {
		return 0
	}
	if !d.mntSet {
		d.mnt, d.mntSet = mountID(d.hostFd, "", unix.AT_EMPTY_PATH, d.host.Dev), true
	}
	return d.mnt
}

// passLocked hands the rest of a path inside a passthrough subtree to the
// host. The caller's own /proc magic links are followed in the view first
// (components after one are walked from the object it stands for, so
// "/proc/self/cwd/.." is the parent of the cwd); other ".." components,
// which could climb back out of the subtree, are resolved lexically, and a
// path that leaves the subtree is walked again in the view.
func (v *Tx) passLocked(c *Caller, dir *Node, rest []string, slash, followFinal bool, ws *walkState) (resolved, error) {
	for i := range rest {
		p := filepath.Clean(dir.hostPath + "/" + strings.Join(rest[:i+1], "/"))
		if r, ok, err := v.magicLocked(c, p, rest[i+1:], slash, followFinal, ws); ok || err != nil {
			return r, err
		}
		if r, ok, err := v.passSymlinkLocked(c, p, rest[i+1:], slash, followFinal, ws); ok || err != nil {
			return r, err
		}
	}
	full := filepath.Clean(dir.hostPath + "/" + strings.Join(rest, "/"))
	if full != dir.hostPath && !strings.HasPrefix(full, dir.hostPath+"/") {
		if slash {
			full += "/"
		}
		if ws.has(unix.RESOLVE_NO_XDEV) {
			return resolved{}, unix.EXDEV // ".." out of the mount
		}
		return v.walkLocked(c, v.root, full, followFinal, ws)
	}
	if slash {
		full += "/"
	}
	return resolved{pass: true, passPath: full}, nil
}

// passSymlinkLocked follows a symlink met in a passthrough subtree outside
// /proc, whose target may lead back into the view: /dev/fd → /proc/self/fd,
// /dev/stdout → /proc/self/fd/1. Left to the host, `echo x > /dev/fd/3/f`
// would write f on the host behind the transaction's back. ok is false when
// p is not such a symlink (or is the final component, not followed).
// /proc's own links are the caller's (self, thread-self) or magic, and are
// left to magicLocked and the host: the supervisor's readlink would answer
// for the supervisor.
//
// Preconditions: v.mu held.
func (v *Tx) passSymlinkLocked(c *Caller, p string, tail []string, slash, followFinal bool, ws *walkState) (resolved, bool, error) {
	if p == "/proc" || strings.HasPrefix(p, "/proc/") || (len(tail) == 0 && !followFinal && !slash) {
		return resolved{}, false, nil
	}
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return resolved{}, false, nil
	}
	target, err := os.Readlink(p)
	if err != nil {
		return resolved{}, false, nil
	}
	if ws.has(unix.RESOLVE_NO_SYMLINKS) {
		return resolved{}, true, unix.ELOOP
	}
	ws.links++
	if ws.links > maxSymlinks {
		return resolved{}, true, unix.ELOOP
	}
	if !strings.HasPrefix(target, "/") {
		target = filepath.Dir(p) + "/" + target
	}
	// The target is resolved before the tail is: "/dev/fd/.." is the
	// caller's /proc/PID, not the symlink /proc/self.
	target = procSelf(c, target, true)
	if len(tail) > 0 {
		target += "/" + strings.Join(tail, "/")
	}
	if slash {
		target += "/"
	}
	r, err := v.walkLocked(c, v.root, target, followFinal, ws)
	return r, true, err
}

func (v *Tx) rootOf(c *Caller) *Node {
	if c.Root != nil && c.Root.node != nil {
		return c.Root.node
	}
	return v.root
}

// readlinkLocked reads a symlink node's target.
func (v *Tx) readlinkLocked(n *Node) (string, error) {
	buf := make([]byte, unix.PathMax)
	var k int
	var err error
	if n.staged != "" {
		k, err = unix.Readlinkat(n.area.fd, n.staged, buf)
	} else {
		k, err = unix.Readlinkat(n.hostParent.hostFd, n.hostName, buf)
	}
	if err != nil {
		return "", v.hostChanged(n.hostPath, err)
	}
	return string(buf[:k]), nil
}

// statLocked returns the view's attributes of n: those of its backing
// object, with the view's link count and directory times. A host
// original's are recorded as a read of its attributes.
func (v *Tx) statLocked(n *Node) (unix.Stat_t, error) { return v.statAsLocked(n, readMeta) }

// statAsLocked is statLocked, recording a host original's attributes as a
// read of the granules g.
func (v *Tx) statAsLocked(n *Node, g granules) (unix.Stat_t, error) {
	var st unix.Stat_t
	var err error
	switch {
	case n.anon:
		err = unix.Fstat(n.anonFd, &st)
	case n.staged != "" && n.keepsIdentity():
		// A host directory, FIFO or device keeps its identity, size and
		// link count; its staged copy holds only the attributes the
		// transaction changed.
		var sst unix.Stat_t
		if err = unix.Fstatat(n.area.fd, n.staged, &sst, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			if st, err = v.hostStatLocked(n); err == nil {
				st.Mode, st.Uid, st.Gid = sst.Mode, sst.Uid, sst.Gid
				st.Atim, st.Mtim, st.Ctim = sst.Atim, sst.Mtim, sst.Ctim
			}
		}
	case n.staged != "":
		if err = unix.Fstatat(n.area.fd, n.staged, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			err = v.stampLocked(n, &st)
		}
	default:
		st, err = v.hostStatLocked(n)
	}
	if err != nil {
		return st, v.hostChanged(n.hostPath, err)
	}
	v.viewAttrsLocked(n, &st, g)
	return st, nil
}

// viewAttrsLocked turns st, the attributes of n's backing object (for a
// host object that keeps its identity with a staged copy: the host's
// identity, size and link count, the copy's mode, owner and times), into
// the view's: the view's link count, ctime, and a changed directory's
// times and size. A host original's are recorded first as a read of the
// granules g.
func (v *Tx) viewAttrsLocked(n *Node, st *unix.Stat_t, g granules) {
	if n.staged == "" && !n.anon {
		// What the host shows, before the view's own changes.
		v.recordReadLocked(n, st, g)
	}
	if n.nlinkSet {
		st.Nlink = n.nlink
	} else if n.areaChild && st.Nlink > 2 {
		// The transaction's staging area is no entry of the view.
		st.Nlink--
	}
	if n.changed != nil {
		st.Mtim, st.Ctim = *n.changed, *n.changed
	}
	st.Ctim = viewCtime(n, st.Ctim)
	if n.isDir() {
		v.dirSizeLocked(n, st)
	}
}

// hostStatLocked stats n's host original, checking it is still the object
// the view found.
func (v *Tx) hostStatLocked(n *Node) (unix.Stat_t, error) {
	var st unix.Stat_t
	var err error
	switch {
	case n.hostFd >= 0:
		err = unix.Fstat(n.hostFd, &st)
	case n.hostParent != nil:
		err = unix.Fstatat(n.hostParent.hostFd, n.hostName, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && !n.isHostObject(&st) {
			err = unix.ESTALE
		}
	default:
		err = unix.ESTALE
	}
	return st, err
}

// readAttrsLocked records that the transaction read host original n's
// attributes by a call other than stat (access, getxattr, listxattr).
func (v *Tx) readAttrsLocked(n *Node) error {
	if n.staged != "" || n.anon || n.host == (FileID{}) || v.reads[n.hostPath].meta {
		return nil
	}
	st, err := v.hostStatLocked(n)
	if err != nil {
		return v.hostChanged(n.hostPath, err)
	}
	v.recordReadLocked(n, &st, readMeta)
	return nil
}

// attrsLocked returns n's permission attributes, from the cache for host
// originals and directories.
func (v *Tx) attrsLocked(n *Node) (attrs, error) {
	cacheable := n.attrsCacheable()
	if cacheable && n.attrSet {
		return n.attr, nil
	}
	st, err := v.statLocked(n)
	if err != nil {
		return attrs{}, err
	}
	if cacheable {
		n.attr, n.attrSet = attrsOf(&st), true
	}
	return attrsOf(&st), nil
}

// magicLocked resolves /proc magic links — fd/N, cwd and root under
// /proc/self, /proc/thread-self, /proc/PID and /proc/PID/task/TID — to the
// objects of the view they stand for, then walks tail from there. The
// kernel would follow them to the backing objects, which would let a chmod
// through /proc/self/fd/N (as glibc's fchmodat does) reach a host
// original, and an open for writing through another process's
// /proc/PID/fd/N write a host file behind the transaction's back.
// ok is false when link (a clean absolute path) is no such link, or one
// to an object the view does not know (a pipe, a socket, an unlinked
// file): the kernel then follows it.
func (v *Tx) magicLocked(c *Caller, link string, tail []string, slash, followFinal bool, ws *walkState) (resolved, bool, error) {
	tid, rest, ok := procTask(c, link)
	if !ok {
		return resolved{}, false, nil
	}
	if len(tail) == 0 && !followFinal && !slash {
		return resolved{}, false, nil // the link itself
	}
	parts := splitPath(rest)
	magic := len(parts) == 2 && parts[0] == "fd" || len(parts) == 1 && (parts[0] == "cwd" || parts[0] == "root")
	if !magic {
		return resolved{}, false, nil
	}
	var n *Node
	if tid == c.Tid {
		switch parts[0] {
		case "fd":
			fdn, err := strconv.Atoi(parts[1])
			if err != nil {
				return resolved{}, false, nil
			}
			n = v.nodeOfCallerFDLocked(c, fdn)
		case "cwd":
			n = c.Cwd.node
			if n == nil {
				// A cwd in a passthrough subtree. The kernel's own
				// link is the directory txexec started in (chdir is
				// emulated), not the caller's: walk from the path
				// the cwd handle has instead.
				return v.walkFromHandleLocked(c, c.Cwd, tail, slash, followFinal, ws)
			}
		case "root":
			n = v.rootOf(c)
		}
	} else {
		// Another process's link: the kernel lets the caller follow it
		// only if it may inspect that process (ptrace_may_access with
		// its file-system credentials); its own readlink says.
		if err := v.host.as(c, func() error { _, err := os.Readlink(link); return err }); err != nil {
			var errno unix.Errno
			if errors.As(err, &errno) {
				return resolved{}, true, errno
			}
			return resolved{}, true, err
		}
		n = v.nodeOfProcLinkLocked(link)
	}
	if n == nil {
		return resolved{}, false, nil
	}
	// nd_jump_link's checks, in its order.
	switch {
	case ws.has(unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS):
		return resolved{}, true, unix.ELOOP
	case ws.has(unix.RESOLVE_NO_XDEV), ws.scope != nil:
		// The walk is inside /proc, another mount than any view object.
		return resolved{}, true, unix.EXDEV
	}
	ws.links++
	if ws.links > maxSymlinks {
		return resolved{}, true, unix.ELOOP
	}
	if len(tail) == 0 {
		return resolved{node: n, slash: slash, magic: true}, true, nil
	}
	p := strings.Join(tail, "/")
	if slash {
		p += "/"
	}
	r, err := v.walkLocked(c, n, p, followFinal, ws)
	return r, true, err
}

// walkFromHandleLocked resolves tail from h, a handle the view does not
// know (in a passthrough subtree), by the path the kernel keeps for it,
// walked again in the view.
func (v *Tx) walkFromHandleLocked(c *Caller, h *Handle, tail []string, slash, followFinal bool, ws *walkState) (resolved, bool, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(h.fd))
	if err != nil || !strings.HasPrefix(p, "/") {
		return resolved{}, true, unix.ENOENT // gone (" (deleted)"), or not a path
	}
	full := strings.Join(append([]string{p}, tail...), "/")
	if slash {
		full += "/"
	}
	r, err := v.walkLocked(c, v.root, full, followFinal, ws)
	return r, true, err
}

// procTask parses the start of a clean absolute path under /proc that
// names a process or thread: the thread whose links it holds (the caller's
// for self, thread-self and its own thread group) and the rest of the
// path. ok is false for any other path.
func procTask(c *Caller, p string) (tid int, rest string, ok bool) {
	r, found := strings.CutPrefix(p, "/proc/")
	if !found {
		return 0, "", false
	}
	first, after, _ := strings.Cut(r, "/")
	switch first {
	case "self":
		return c.Tid, after, true
	case "thread-self":
		return c.Tid, after, true
	}
	pid, err := strconv.Atoi(first)
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	tid = pid
	if pid == c.Tgid {
		tid = c.Tid
	}
	if t, found := strings.CutPrefix(after, "task/"); found {
		num, more, _ := strings.Cut(t, "/")
		if tid, err = strconv.Atoi(num); err != nil || tid <= 0 {
			return 0, "", false
		}
		after = more
	}
	return tid, after, true
}

// nodeOfProcLinkLocked returns the view object another process's magic
// link (a clean /proc path) leads to, or nil if the view does not know
// it. The supervisor follows the link itself (O_PATH).
//
// Preconditions: v.mu held; the caller may follow link.
func (v *Tx) nodeOfProcLinkLocked(link string) *Node {
	fd, err := unix.Open(link, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return v.nodeOfOwnFDLocked(fd)
}

// nodeOfCallerFDLocked returns the view object behind the caller's
// descriptor fd, or nil if the view did not hand it out.
func (v *Tx) nodeOfCallerFDLocked(c *Caller, fd int) *Node {
	pidfd, err := unix.PidfdOpen(c.Tid, unix.PIDFD_THREAD)
	if err != nil {
		return nil
	}
	defer unix.Close(pidfd)
	ours, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return nil
	}
	return v.nodeOfOwnFDLocked(ours)
}

// nodeOfOwnFDLocked looks up the object of fd, a descriptor of the
// supervisor's, as nodeOfFDLocked does, and closes fd.
//
// Preconditions: v.mu held.
func (v *Tx) nodeOfOwnFDLocked(fd int) *Node {
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil
	}
	return v.nodeOfFDLocked(fd, &st)
}
