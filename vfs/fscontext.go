package vfs

import (
	"os"
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

// DirPath implements View.
func (v *Tx) DirPath(d *Handle) (string, error) {
	if d.node == nil {
		return v.host.DirPath(d)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for n := d.node; n != v.root; n = n.parent {
		if n.removed || n.parent == nil {
			return "", unix.ENOENT
		}
	}
	return d.node.viewPathLocked(), nil
}

// HandleOf implements View: a descriptor is known by the object it refers
// to (docs/architecture.md §3); see nodeOfFDLocked.
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
	return v.nodeOfObjectLocked(st, func() string {
		p, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		return p
	})
}

// nodeOfObjectLocked is nodeOfFDLocked for the object st of a descriptor
// whose path, as /proc/PID/fd shows it, path returns ("" when unknown):
// also the feed's, for a descriptor the agent looked up itself.
//
// Preconditions: v.mu held.
func (v *Tx) nodeOfObjectLocked(st *unix.Stat_t, path func() string) *Node {
	if n := v.nodes[idOf(st)]; n != nil {
		return n
	}
	if v.outputs[idOf(st)] {
		// Written straight through inherited descriptors: outside the
		// transaction (SetOutputs), so served by the host too — a staged
		// copy would lose those writes at commit.
		return nil
	}
	p := path()
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
		return nil // a pipe, socket or anonymous inode; or unlinked
	}
	r, err := v.walkLocked(&Caller{Cred: rootCred}, v.root, p, false, &walkState{})
	if err != nil || r.pass || r.node == nil || !r.node.isHostObject(st) {
		return nil
	}
	return r.node
}

// Readlink implements View.
func (v *Tx) Readlink(c *Caller, at *Handle, path string) (string, error) {
	return with(v, c, at, path, emptyPathOK,
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
	return with(v, c, at, path, followFinal|atEmptyPath(flags),
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

// Executable implements View.
func (v *Tx) Executable(c *Caller, at *Handle, path string, flags int) (Exe, error) {
	return with(v, c, at, path, atLookup(flags),
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
