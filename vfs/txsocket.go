package vfs

import (
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A socket bound to a path is a live kernel object: processes connect to it
// by that path, and connect(2) runs in the kernel, which resolves the path
// on the host. So the socket file of an AF_UNIX bind is made on the host at
// once — in the directory the caller named, which only the view can find
// (its cwd, dirfds, staged directories) — and the view knows it as its own
// host entry: it lists, stats and removes it like any other, commit leaves
// it, and abort (or a failed commit) removes it again. A socket bound in a
// directory the host does not have yet (made in the transaction) is staged
// instead and appears at commit; until then nothing can connect to it by
// path. docs/semantics.md lists both.

// hostMade is a host entry the transaction made at once (a bound socket),
// with its directory's mtime before and after: abort puts the mtime back
// when nothing else changed the directory since.
type hostMade struct {
	path string
	id   FileID

	dir                 string
	dirID               FileID
	dirBefore, dirAfter unix.Timespec
}

// BindUnix implements View.
func (v *Tx) BindUnix(c *Caller, at *Handle, path string, sock int) error {
	return withParentErr(v, c, at, path,
		func(hat *Handle, hp string) error { return v.host.BindUnix(c, hat, hp, sock) },
		func(t target) error {
			if t.node != nil || t.dir == nil {
				return unix.EADDRINUSE
			}
			if err := v.mayCreateLocked(c, t.dir, t.name); err != nil {
				return err
			}
			if t.dir.hostFd >= 0 && v.hostAbsentLocked(t.dir, t.name) {
				return v.bindOnHostLocked(c, t.dir, t.name, sock)
			}
			_, err := v.createLocked(c, t.dir, t.name, unix.S_IFSOCK|0o777&^c.Umask, func(at int, sname string, perm uint32) error {
				return bindPath(sock, "/proc/self/fd/"+strconv.Itoa(at)+"/"+sname)
			})
			return err
		})
}

// hostAbsentLocked reports whether host directory dir has no entry name.
func (v *Tx) hostAbsentLocked(dir *Node, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir.hostFd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT
}

// bindOnHostLocked binds sock to name in host directory dir, as the caller
// (owner, group, the kernel's permission checks), and makes the new entry
// the view's.
//
// Preconditions: v.mu held; the view's permission checks passed.
func (v *Tx) bindOnHostLocked(c *Caller, dir *Node, name string, sock int) error {
	// The view's descriptor is on a read-only clone of the mount tree;
	// the socket is made through the real directory, checked to be it.
	dfd, err := unix.Open(dir.hostPath, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return v.hostChanged(dir.hostPath, err)
	}
	defer unix.Close(dfd)
	var dst unix.Stat_t
	if err := unix.Fstat(dfd, &dst); err != nil || !dir.isHostObject(&dst) {
		return v.hostChanged(dir.hostPath, unix.ESTALE)
	}
	v.fastEntryLocked(dir, name) // the one change made on the host at once
	if err := v.host.bindIn(c, dfd, name, sock); err != nil {
		return err
	}
	var st, after unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if err := unix.Fstat(dfd, &after); err != nil {
		return err
	}
	p := childPath(dir.hostPath, name)
	v.hostMade = append(v.hostMade, hostMade{path: p, id: idOf(&st),
		dir: dir.hostPath, dirID: idOf(&dst), dirBefore: dst.Mtim, dirAfter: after.Mtim})
	if r := v.reads[dir.hostPath]; r.listing {
		// Listed before: validation must not take this entry for another
		// process's.
		if v.madeAfterListing == nil {
			v.madeAfterListing = map[string]map[string]bool{}
		}
		if v.madeAfterListing[dir.hostPath] == nil {
			v.madeAfterListing[dir.hostPath] = map[string]bool{}
		}
		v.madeAfterListing[dir.hostPath][name] = true
	}
	v.reads[p] = readRecord{exists: true, id: idOf(&st), typ: unix.S_IFSOCK}
	n, err := v.hostNodeLocked(dir, name, &st)
	if err != nil {
		return err
	}
	n.attr, n.attrSet = attrsOf(&st), true
	if dir.lookups != nil {
		delete(dir.lookups, name)
	}
	v.setEntryLocked(dir, name, n)
	return nil
}

// KeepHostEffects says the transaction committed (or was kept): the host
// entries it made at once stay.
func (v *Tx) KeepHostEffects() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.hostMade = nil
}

// undoHostEffectsLocked removes the host entries the transaction made at
// once, where they are still what it made.
//
// Preconditions: v.mu held.
func (v *Tx) undoHostEffectsLocked() {
	for i := len(v.hostMade) - 1; i >= 0; i-- {
		m := v.hostMade[i]
		var st, dst unix.Stat_t
		if unix.Lstat(m.path, &st) != nil || idOf(&st) != m.id {
			continue
		}
		// The directory's mtime is still the bind's (nothing else
		// changed its entries since): the removal puts it back, so that
		// an aborted transaction leaves the directory as it was.
		restore := unix.Lstat(m.dir, &dst) == nil && idOf(&dst) == m.dirID && dst.Mtim == m.dirAfter
		if os.Remove(m.path) == nil && restore {
			unix.UtimesNanoAt(unix.AT_FDCWD, m.dir, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, m.dirBefore}, unix.AT_SYMLINK_NOFOLLOW)
		}
	}
	v.hostMade = nil
}

// BindUnix implements View: the kernel binds, for the caller, through a
// descriptor on the directory the caller's path names (a path relative to
// the caller's cwd means nothing to the supervisor's kernel cwd).
func (h *Host) BindUnix(c *Caller, at *Handle, path string, sock int) error {
	dirfd, p := hostPath(c, at, path, false)
	dir, name := splitLast(p)
	var dfd int
	err := h.as(c, func() error {
		var err error
		dfd, err = unix.Openat(dirfd, dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return h.bindIn(c, dfd, name, sock)
}

// bindIn binds sock to name in directory dfd as the caller, with the mode
// the caller's umask gives (the supervisor's own umask is 0).
func (h *Host) bindIn(c *Caller, dfd int, name string, sock int) error {
	return h.as(c, func() error {
		if err := bindPath(sock, "/proc/self/fd/"+strconv.Itoa(dfd)+"/"+name); err != nil {
			return err
		}
		return unix.Fchmodat(dfd, name, 0o777&^c.Umask, 0)
	})
}

// BindAddr implements View: any other address (another family, an abstract
// or automatic AF_UNIX name) is bound by the kernel for the caller, with
// the caller's capabilities (privileged ports, netlink groups).
func (h *Host) BindAddr(c *Caller, sock int, addr []byte) error {
	return h.as(c, func() error { return bindRaw(sock, addr) })
}

// BindAddr implements View.
func (v *Tx) BindAddr(c *Caller, sock int, addr []byte) error { return v.host.BindAddr(c, sock, addr) }

// bindPath binds sock to the AF_UNIX path p.
func bindPath(sock int, p string) error {
	return unix.Bind(sock, &unix.SockaddrUnix{Name: p})
}

// bindRaw binds sock to the address bytes as the caller passed them.
func bindRaw(sock int, addr []byte) error {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(sock), uintptr(p), uintptr(len(addr)))
	if e != 0 {
		return e
	}
	return nil
}

// splitLast splits a path into its directory ("." for none) and its last
// component.
func splitLast(p string) (dir, name string) {
	for len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	i := len(p) - 1
	for i >= 0 && p[i] != '/' {
		i--
	}
	switch {
	case i < 0:
		return ".", p
	case i == 0:
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}
