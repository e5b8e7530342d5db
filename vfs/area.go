package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/fastlookup"
	"txexec/store"
)

// An area is a staging area: the directory that holds the transaction's
// staged objects for the paths of one mount, on that mount (docs/architecture.md
// §4: stage where commit is a rename). Write-through renames a staged object
// into place, and rename(2) fails with EXDEV between two mounts — also two
// mounts of one file system, such as a bind mount —; and FICLONE shares
// extents only between files reached through one mount (ioctl_file_clone
// compares the vfsmounts), so only then is copy-up O(1). The state
// directory's staging/ID (Tx.home) serves the paths on its own mount; the
// first change on any other mount makes an area at that mount's root
// (TxOptions.NewArea: MOUNTPOINT/.txexec-staging-INSTANCE-ID). Read-only
// mounts never get one: changes there fail with EROFS first.
type area struct {
	// path is the area's absolute host path: the journal names staged
	// objects by it, and write-through and recovery reach them that way.
	path string
	// fd is an O_PATH descriptor on the area, opened through the view's
	// root (openRoot's clone of the mount tree), through which the host
	// originals are read too: a copy-up clones within one mount.
	fd int
}

// pathOf is the host path of the staged object name in a.
func (a *area) pathOf(name string) string { return a.path + "/" + name }

// openArea opens the staging area at path through the view's root and
// returns it with the view's id of its mount (see mountID).
func openArea(rootFd int, path string) (*area, uint64, error) {
	fd, err := unix.Openat(rootFd, "."+path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, &os.PathError{Op: "open staging area", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, &os.PathError{Op: "stat staging area", Path: path, Err: err}
	}
	return &area{path: path, fd: fd}, mountID(fd, "", unix.AT_EMPTY_PATH, st.Dev), nil
}

// mountID identifies the mount that (dirfd, path) is on: its mount id
// (statx STATX_MNT_ID), or where the kernel has none the device dev. The
// view's clone of the mount tree (openRoot) has mount ids of its own.
func mountID(dirfd int, path string, flags int, dev uint64) uint64 {
	var stx unix.Statx_t
	if err := unix.Statx(dirfd, path, flags, unix.STATX_MNT_ID, &stx); err == nil && stx.Mask&unix.STATX_MNT_ID != 0 {
		return stx.Mnt_id
	}
	return dev
}

// isAreaName reports whether name, found in a host directory, may be a
// staging area or an undo area (store.UndoAreaPrefix) of some transaction. Host listings leave such names out
// (readHostDirAll): areas come and go at mount roots while transactions
// run, and a transaction that listed a mount root and then changed
// something on that mount must not conflict with its own area.
func isAreaName(name string) bool {
	return strings.HasPrefix(name, store.AreaPrefix) || strings.HasPrefix(name, store.UndoAreaPrefix)
}

// areaForLocked returns the staging area for new staged objects that
// shadow paths in directory dir, making it at the first change on dir's
// mount. When that is impossible the transaction is doomed with a
// *StagingError naming path, the view path being changed, and the change
// fails with EIO: never a silent fallback that would rename across mounts
// after the commit point.
//
// Preconditions: v.mu held; dir is a directory of the view.
func (v *Tx) areaForLocked(dir *Node, path string) (*area, error) {
	hd := hostDirOf(dir)
	if hd == nil {
		return nil, v.stagingFailedLocked(path, errors.New("its directory is on no host mount"))
	}
	mnt := v.mountOfLocked(hd)
	if a := v.areas[mnt]; a != nil {
		return a, nil
	}
	err := v.areaErrs[mnt]
	if err == nil {
		var a *area
		if a, err = v.makeAreaLocked(hd, mnt); err == nil {
			v.areas[mnt] = a
			return a, nil
		}
		if errors.Is(err, unix.ENOSPC) {
			// No room for the area or its record in the store: the
			// change fails as Linux fails one on a full disk, and a
			// later one may find room.
			return nil, unix.ENOSPC
		}
		v.areaErrs[mnt] = err
	}
	return nil, v.stagingFailedLocked(path, err)
}

// hostDirOf returns the host directory whose mount the staged objects made
// in directory d belong on: d itself, or for a directory the transaction
// made, the host directory it was made in (a directory made in a
// transaction is never a mount point, and nothing moves across mounts in
// the view: rename and link refuse it with EXDEV as Linux does).
func hostDirOf(d *Node) *Node {
	for d != nil && d.hostFd < 0 {
		if d.parent != nil {
			d = d.parent
		} else {
			d = d.removedFrom
		}
	}
	return d
}

// makeAreaLocked makes the staging area of mount mnt, which host directory
// hd is on, at the mount's root: the highest host directory above hd on
// the same mount.
//
// Preconditions: v.mu held.
func (v *Tx) makeAreaLocked(hd *Node, mnt uint64) (*area, error) {
	top := hd
	for top.hostParent != nil && v.mountOfLocked(top.hostParent) == mnt {
		top = top.hostParent
	}
	if v.newArea == nil {
		return nil, fmt.Errorf("no staging area can be made on the mount at %s", top.hostPath)
	}
	// The mount's root gets an entry the view hides, and another link.
	v.fastNodeLocked(top, fastlookup.ChangedSelf)
	p, err := v.newArea(top.hostPath)
	if err != nil {
		return nil, err
	}
	if v.fast != nil {
		v.fast.Change(p, fastlookup.ChangedSubtree)
		v.publishLocked()
	}
	a, amnt, err := openArea(v.root.hostFd, p)
	if err != nil {
		return nil, err
	}
	// Write-through renames by host path, outside the view's clone of
	// the mount tree, which mounts made since the transaction began are
	// missing from: check both.
	if err := sameHostMount(p, hd.hostPath); amnt != mnt || err != nil {
		unix.Close(a.fd)
		if err == nil {
			err = fmt.Errorf("staging area %s is not on the mount of %s", p, hd.hostPath)
		}
		return nil, err
	}
	if filepath.Dir(p) == top.hostPath {
		top.areaChild = true
	}
	return a, nil
}

// sameHostMount checks that host paths a and b are on one mount.
func sameHostMount(a, b string) error {
	var sa, sb unix.Stat_t
	if err := unix.Lstat(a, &sa); err != nil {
		return &os.PathError{Op: "stat", Path: a, Err: err}
	}
	if err := unix.Lstat(b, &sb); err != nil {
		return &os.PathError{Op: "stat", Path: b, Err: err}
	}
	flags := unix.AT_SYMLINK_NOFOLLOW
	if mountID(unix.AT_FDCWD, a, flags, sa.Dev) != mountID(unix.AT_FDCWD, b, flags, sb.Dev) {
		return fmt.Errorf("staging area %s is not on the mount of %s (the host's mounts changed since the transaction began)", a, b)
	}
	return nil
}

// stagingFailedLocked dooms the transaction: the change to path cannot be
// staged (why), and fails with EIO.
//
// Preconditions: v.mu held.
func (v *Tx) stagingFailedLocked(path string, why error) error {
	if v.doomed == nil {
		v.doomed = &StagingError{Path: path, Err: why}
	}
	return unix.EIO
}

// StagingError is why a transaction cannot commit: it changed Path, on a
// mount where no staging area could be made (Err). The change failed with
// EIO.
type StagingError struct {
	Path string
	Err  error
}

func (e *StagingError) Error() string {
	msg := fmt.Sprintf("cannot stage the change to %s: %v", e.Path, e.Err)
	if errors.Is(e.Err, fs.ErrPermission) {
		msg += " (a transaction keeps its changes on their own mount, in a directory it creates at the mount's root: run txexec as a user who may create it there, such as root)"
	}
	return msg
}

func (e *StagingError) Unwrap() error { return e.Err }

// areasLocked returns the staging areas made so far, home first.
//
// Preconditions: v.mu held.
func (v *Tx) areasLocked() []*area {
	out := []*area{v.home}
	for _, a := range v.areas {
		if a != v.home {
			out = append(out, a)
		}
	}
	return out
}
