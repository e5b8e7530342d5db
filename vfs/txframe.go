package vfs

import (
	"strings"

	"golang.org/x/sys/unix"
)

// target is a resolved path: either a place in the view, or a path the host
// view must serve (a passthrough subtree or a descriptor the view does not
// know).
type target struct {
	resolved
	hostAt   *Handle
	hostPath string
	// viaWalk: the view walked into a passthrough subtree and hostPath is
	// the absolute host path it reached (else hostAt is the caller's own
	// descriptor and hostPath its path, untouched).
	viaWalk bool
}

// lookupHow says how a path call resolves its path: the two choices the
// flags of the *at calls make.
type lookupHow uint8

const (
	// followFinal: a final symlink is followed (no AT_SYMLINK_NOFOLLOW).
	followFinal lookupHow = 1 << iota
	// emptyPathOK: an empty path names the dirfd itself (AT_EMPTY_PATH).
	emptyPathOK
	// finalAsIs is neither: a final symlink is the object itself, and an
	// empty path is ENOENT.
	finalAsIs lookupHow = 0
)

// atLookup is the lookupHow of an *at call's flags, which follows a
// final symlink unless AT_SYMLINK_NOFOLLOW.
func atLookup(flags int) lookupHow {
	return followFinal.If(flags&unix.AT_SYMLINK_NOFOLLOW == 0) | atEmptyPath(flags)
}

// atEmptyPath is emptyPathOK when flags has AT_EMPTY_PATH.
func atEmptyPath(flags int) lookupHow { return emptyPathOK.If(flags&unix.AT_EMPTY_PATH != 0) }

// If is l when cond holds, else nothing.
func (l lookupHow) If(cond bool) lookupHow {
	if cond {
		return l
	}
	return 0
}

// resolveLocked resolves (at, path) for c as lk says.
//
// Preconditions: v.mu held.
func (v *Tx) resolveLocked(c *Caller, at *Handle, path string, lk lookupHow) (target, error) {
	return v.resolveWithLocked(c, at, path, lk, &walkState{})
}

// resolveParentLocked resolves the path of a call that acts on a name in
// its directory — unlink, rmdir, rename, mkdir, mknod, symlink, link's new
// name: the final component is never followed, not even with a trailing
// slash (which only asks for a directory), and whether a trailing slash on
// a non-directory is ENOTDIR, EEXIST or ENOENT is the call's to say.
//
// Preconditions: v.mu held.
func (v *Tx) resolveParentLocked(c *Caller, at *Handle, path string) (target, error) {
	return v.resolveWithLocked(c, at, path, finalAsIs, &walkState{parentOp: true})
}

// resolveHowLocked is resolveLocked under openat2's RESOLVE_* flags.
//
// Preconditions: v.mu held.
func (v *Tx) resolveHowLocked(c *Caller, at *Handle, path string, lk lookupHow, resolve uint64) (target, error) {
	return v.resolveWithLocked(c, at, path, lk, &walkState{resolve: resolve})
}

func (v *Tx) resolveWithLocked(c *Caller, at *Handle, path string, lk lookupHow, ws *walkState) (target, error) {
	resolve := ws.resolve
	if path == "" {
		if lk&emptyPathOK == 0 {
			return target{}, unix.ENOENT
		}
		if at.node == nil {
			return target{resolved: resolved{pass: true}, hostAt: at, hostPath: ""}, nil
		}
		return target{resolved: resolved{node: at.node}}, nil
	}
	scoped := resolve&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) != 0
	start := at.node
	if start == nil && (!strings.HasPrefix(path, "/") || scoped) {
		// A descriptor the view does not know: the host walks from it.
		return target{resolved: resolved{pass: true}, hostAt: at, hostPath: path}, nil
	}
	if start == nil {
		start = v.root
	}
	if scoped {
		ws.scope = start
	}
	r, err := v.walkLocked(c, start, path, lk&followFinal != 0, ws)
	if err != nil {
		return target{}, err
	}
	if r.pass {
		return target{resolved: r, hostAt: c.Cwd, hostPath: r.passPath, viaWalk: true}, nil
	}
	if r.node != nil && r.slash && !r.node.isDir() && !ws.parentOp {
		return target{}, unix.ENOTDIR
	}
	if r.dir != nil && r.dir.removed {
		return target{}, unix.ENOENT
	}
	return target{resolved: r}, nil
}

// with runs act on the resolved target under v.mu, or pass on the host
// view (without v.mu, since the host may block, e.g. opening a FIFO).
func with[T any](v *Tx, c *Caller, at *Handle, path string, lk lookupHow,
	pass func(hat *Handle, hpath string) (T, error), act func(t target) (T, error)) (T, error) {
	v.mu.Lock()
	t, err := v.resolveLocked(c, at, path, lk)
	if err == nil && t.pass {
		v.mu.Unlock()
		return pass(t.hostAt, t.hostPath)
	}
	defer v.mu.Unlock()
	if err != nil {
		var zero T
		return zero, err
	}
	return act(t)
}

// withErr is with for operations that return only an error.
func withErr(v *Tx, c *Caller, at *Handle, path string, lk lookupHow,
	pass func(hat *Handle, hpath string) error, act func(t target) error) error {
	_, err := with(v, c, at, path, lk,
		func(hat *Handle, hp string) (struct{}, error) { return struct{}{}, pass(hat, hp) },
		func(t target) (struct{}, error) { return struct{}{}, act(t) })
	return err
}

// withParentErr is withErr for calls that act on a name in its directory
// (see resolveParentLocked).
func withParentErr(v *Tx, c *Caller, at *Handle, path string,
	pass func(hat *Handle, hpath string) error, act func(t target) error) error {
	v.mu.Lock()
	t, err := v.resolveParentLocked(c, at, path)
	if err == nil && t.pass {
		v.mu.Unlock()
		return pass(t.hostAt, t.hostPath)
	}
	defer v.mu.Unlock()
	if err != nil {
		return err
	}
	return act(t)
}

// pathOfLocked is the view path of a resolved object, as the journal names
// it: the path the call gave, or for an object reached by descriptor (or
// as ".") the name placeLocked finds for it; "" for one that has no name
// left anywhere, whose changes journalOnLocked drops.
func (v *Tx) pathOfLocked(t target) (string, error) {
	if t.dir != nil {
		return childPath(t.dir.viewPathLocked(), t.name), nil
	}
	if t.node == nil {
		return "", unix.EINVAL
	}
	p, ok := v.placeLocked(t.node)
	if !ok {
		return "", unix.EINVAL
	}
	return p.path, nil
}

// entryIs reports whether name in directory d currently is n.
func (d *Node) entryIs(name string, n *Node) bool {
	if e, ok := d.entries[name]; ok {
		return e == n
	}
	return !d.opaque && d.lookups[name] == n
}
