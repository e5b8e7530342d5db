package txn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/store"
)

// ApplyOptions configure Apply.
type ApplyOptions struct {
	// Durable fsyncs, once each at the end, every directory whose entries
	// changed and every file whose attributes or contents changed, and
	// for an op skipped as done already, the directories it names: a
	// redo after a crash must make durable what the interrupted
	// write-through did but had not synced yet.
	Durable bool
	// Skipped, when set, hears about every op Apply skipped because its
	// object was not the expected one: normal when redoing, suspicious on
	// the first write-through (an unsupervised process changed the host).
	Skipped func(i int, op store.RedoOp, why string)
	// Keep, when set, keeps the before-images of what the ops replace,
	// remove or change, for txexec undo (see Keeper).
	Keep *Keeper
}

// Fault points in Apply, for crash tests (see store.Fault).
const (
	FaultBeforeOp = "txn.apply.before-op" // before each op
	FaultMidOp    = "txn.apply.mid-op"    // inside ops of several steps
)

// Apply writes ops through to the host, in order; store.OpRename and its
// siblings say what each kind does. It is idempotent: after it applied
// any prefix of ops (and was killed, even inside an op), applying the
// whole list again gives the same result as applying it once. Commit
// write-through and recovery both use it.
//
// Every op names the inode it expects (Ino, and Ino2 for an exchange): an
// op whose object is not where it expects it has been done already, or
// superseded by a later op of the same list, and is skipped (see
// ApplyOptions.Skipped). Inode numbers are compared without the device
// number, which is not stable across reboots.
func Apply(ops []store.RedoOp, opt ApplyOptions) error {
	if err := CheckOps(ops); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	a := &applier{opt: opt, synced: map[string]bool{}}
	if opt.Keep != nil {
		kp, err := startKeeping(opt.Keep, ops)
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		defer kp.close()
		a.keep = kp
	}
	for i, op := range ops {
		store.Fault(FaultBeforeOp)
		a.n = i
		if a.keep != nil && i >= a.keep.unplanned {
			if err := a.keep.plan(a, i); err != nil {
				return &OpError{Index: i, Op: op, Err: err}
			}
		}
		why, err := a.apply(op)
		a.closeNames()
		if err != nil {
			return &OpError{Index: i, Op: op, Err: err}
		}
		if why != "" {
			if err := a.skipped(op); err != nil {
				return fmt.Errorf("apply: %w", err)
			}
			// Done already, perhaps by a write-through that died before
			// its fsyncs; or superseded, and then syncing costs one
			// fsync of a directory the list changes anyway.
			a.syncLater(filepath.Dir(op.Path), 0)
			if op.Src != "" {
				a.syncLater(filepath.Dir(op.Src), 0)
			}
			if opt.Skipped != nil {
				opt.Skipped(i, op, why)
			}
		}
	}
	if a.keep != nil {
		if err := a.keep.finish(a); err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		opt.Keep.Bytes = a.keep.bytes
	}
	if opt.Durable {
		if err := sysx.Sync(a.toSync); err != nil {
			return fmt.Errorf("apply: %w", err)
		}
	}
	return nil
}

type applier struct {
	opt ApplyOptions
	// toSync are the objects to fsync at the end, in the order first
	// touched: directories (Dir: whatever directory is there then) and
	// files that must still be the inode the op changed.
	toSync []sysx.SyncTarget
	synced map[string]bool // paths in toSync
	// open are the closers of the descriptors that sys opened for the
	// current op.
	open []func()
	// keep keeps before-images (ApplyOptions.Keep); n is the index of the
	// current op.
	keep *keeping
	n    int
	// srcType and srcStat are the type and attributes of the object the
	// current rename moves.
	srcType uint32
	srcStat unix.Stat_t
}

// OpError is a redo op that failed: Apply stops there, and whoever redoes
// the transaction (recovery) meets it again until its cause is removed.
type OpError struct {
	Index int
	Op    store.RedoOp
	Err   error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("apply redo op %d (%s): %v", e.Index, e.Op.Kind, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// sys returns the name under which system calls reach path: path itself,
// or through a descriptor on its directory when path is longer than
// PATH_MAX (sysx.ShortPath), closed when the op ends.
func (a *applier) sys(path string) (string, error) {
	name, done, err := sysx.ShortPath(path)
	if err != nil {
		return "", &os.PathError{Op: "open the directory of", Path: path, Err: err}
	}
	a.open = append(a.open, done)
	return name, nil
}

// sys2 is sys for the two paths of an op.
func (a *applier) sys2(p1, p2 string) (string, string, error) {
	n1, err := a.sys(p1)
	if err != nil {
		return "", "", err
	}
	n2, err := a.sys(p2)
	return n1, n2, err
}

func (a *applier) closeNames() {
	for _, done := range a.open {
		done()
	}
	a.open = a.open[:0]
}

func (a *applier) syncLater(path string, ino uint64) {
	if !a.opt.Durable || a.synced[path] {
		return
	}
	a.synced[path] = true
	a.toSync = append(a.toSync, sysx.SyncTarget{Path: path, Dir: ino == 0, Ino: ino})
}

// apply does op, or returns why it skipped it. CheckOps made sure its
// kind is in opKinds.
func (a *applier) apply(op store.RedoOp) (skipped string, err error) {
	return opKinds[op.Kind].apply(a, op)
}

// lstat stats path without following a final symlink; ok is false when
// it does not exist.
func lstat(path string) (st unix.Stat_t, ok bool, err error) {
	name, done, err := sysx.ShortPath(path)
	if err == nil {
		err = sysx.Retry(func() error { return unix.Lstat(name, &st) })
		done()
	}
	return lstatResult(st, path, err)
}

// lstatResult is an lstat's answer for path: not there (ENOENT, ENOTDIR)
// is ok false, not an error.
func lstatResult(st unix.Stat_t, path string, err error) (unix.Stat_t, bool, error) {
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		return st, false, nil
	case err != nil:
		return st, false, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return st, true, nil
}

// expect reports why path is not inode ino ("" when it is).
func expect(path string, ino uint64) (st unix.Stat_t, why string, err error) {
	st, ok, err := lstat(path)
	switch {
	case err != nil:
		return st, "", err
	case !ok:
		return st, path + " is absent", nil
	case st.Ino != ino:
		return st, fmt.Sprintf("%s is inode %d, not %d", path, st.Ino, ino), nil
	}
	return st, "", nil
}

func (a *applier) rename(op store.RedoOp) (string, error) {
	sst, planned := a.keep.plannedSource(a.n)
	if !planned {
		var why string
		var err error
		if sst, why, err = expect(op.Src, op.Ino); why != "" || err != nil {
			return why, err
		}
	}
	a.srcType, a.srcStat = sst.Mode&unix.S_IFMT, sst
	src, dst, err := a.sys2(op.Src, op.Path)
	if err != nil {
		return "", err
	}
	if planned && !a.keep.have[a.n] { // of a creates line, not a run kept
		created, err := a.keep.placeCreate(a, op, src, dst)
		if created || err != nil {
			return "", err
		}
	}
	if err := a.before(op); err != nil {
		return "", err
	}
	err = sysx.Retry(func() error { return unix.Renameat(unix.AT_FDCWD, src, unix.AT_FDCWD, dst) })
	if err != nil {
		return "", &os.LinkError{Op: "rename", Old: op.Src, New: op.Path, Err: err}
	}
	a.syncLater(filepath.Dir(op.Src), 0)
	a.syncLater(filepath.Dir(op.Path), 0)
	return "", nil
}

func (a *applier) exchange(op store.RedoOp) (string, error) {
	src, ok, err := lstat(op.Src)
	if err != nil || !ok {
		return op.Src + " is absent", err
	}
	dst, ok, err := lstat(op.Path)
	if err != nil || !ok {
		return op.Path + " is absent", err
	}
	switch {
	case src.Ino == op.Ino2 && dst.Ino == op.Ino:
		return "exchanged already", nil
	case src.Ino != op.Ino || dst.Ino != op.Ino2:
		return fmt.Sprintf("%s and %s are inodes %d and %d, not %d and %d",
			op.Src, op.Path, src.Ino, dst.Ino, op.Ino, op.Ino2), nil
	}
	if err := a.before(op); err != nil {
		return "", err
	}
	sname, dname, err := a.sys2(op.Src, op.Path)
	if err != nil {
		return "", err
	}
	err = sysx.Retry(func() error {
		return unix.Renameat2(unix.AT_FDCWD, sname, unix.AT_FDCWD, dname, unix.RENAME_EXCHANGE)
	})
	if err != nil {
		return "", &os.LinkError{Op: "exchange", Old: op.Src, New: op.Path, Err: err}
	}
	a.syncLater(filepath.Dir(op.Src), 0)
	a.syncLater(filepath.Dir(op.Path), 0)
	return "", nil
}

func (a *applier) link(op store.RedoOp) (string, error) {
	st, ok, err := lstat(op.Path)
	if err != nil {
		return "", err
	}
	if ok {
		if st.Ino == op.Ino {
			return op.Path + " is linked already", nil
		}
		return fmt.Sprintf("%s exists as inode %d", op.Path, st.Ino), nil
	}
	if _, why, err := expect(op.Src, op.Ino); why != "" || err != nil {
		return why, err
	}
	if err := a.before(op); err != nil {
		return "", err
	}
	sname, dname, err := a.sys2(op.Src, op.Path)
	if err != nil {
		return "", err
	}
	err = sysx.Retry(func() error { return unix.Linkat(unix.AT_FDCWD, sname, unix.AT_FDCWD, dname, 0) })
	if err != nil {
		return "", &os.LinkError{Op: "link", Old: op.Src, New: op.Path, Err: err}
	}
	a.syncLater(filepath.Dir(op.Path), 0)
	return "", nil
}

// remove does store.OpUnlink and store.OpRmdir.
func (a *applier) remove(op store.RedoOp) (string, error) {
	st, why, err := expect(op.Path, op.Ino)
	if why != "" || err != nil {
		return why, err
	}
	verb, flags := "unlink", 0
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if op.Kind == store.OpRmdir {
		verb, flags = "rmdir", unix.AT_REMOVEDIR
		if !isDir {
			return "", &os.PathError{Op: verb, Path: op.Path, Err: unix.ENOTDIR}
		}
	} else if isDir {
		return "", &os.PathError{Op: verb, Path: op.Path, Err: unix.EISDIR}
	}
	if err := a.before(op); err != nil {
		return "", err
	}
	name, err := a.sys(op.Path)
	if err != nil {
		return "", err
	}
	if err := sysx.Retry(func() error { return unix.Unlinkat(unix.AT_FDCWD, name, flags) }); err != nil {
		return "", &os.PathError{Op: verb, Path: op.Path, Err: err}
	}
	a.syncLater(filepath.Dir(op.Path), 0)
	return "", nil
}

// xattr sets or removes one extended attribute, not following a symlink.
// Setting is idempotent; removing one already gone is done.
func (a *applier) xattr(op store.RedoOp) (string, error) {
	if _, why, err := expect(op.Path, op.Ino); why != "" || err != nil {
		return why, err
	}
	if err := a.before(op); err != nil {
		return "", err
	}
	name, err := a.sys(op.Path)
	if err != nil {
		return "", err
	}
	if op.Kind == store.OpSetxattr {
		err = sysx.Retry(func() error { return unix.Lsetxattr(name, op.XattrName, op.XattrValue, 0) })
	} else {
		err = sysx.Retry(func() error { return unix.Lremovexattr(name, op.XattrName) })
		if err == unix.ENODATA {
			err = nil
		}
	}
	if err != nil {
		return "", &os.PathError{Op: string(op.Kind) + " " + op.XattrName, Path: op.Path, Err: err}
	}
	a.syncLater(op.Path, op.Ino)
	return "", nil
}

func (a *applier) setattr(op store.RedoOp) (string, error) {
	st, why, err := expect(op.Path, op.Ino)
	if why != "" || err != nil {
		return why, err
	}
	if err := a.before(op); err != nil {
		return "", err
	}
	name, err := a.sys(op.Path)
	if err != nil {
		return "", err
	}
	// Owner first: chown clears set-user-ID and set-group-ID bits that the
	// mode may set again.
	if op.Attrs&(store.AttrUID|store.AttrGID) != 0 {
		uid, gid := -1, -1
		if op.Attrs&store.AttrUID != 0 {
			uid = int(op.UID)
		}
		if op.Attrs&store.AttrGID != 0 {
			gid = int(op.GID)
		}
		err := sysx.Retry(func() error {
			return unix.Fchownat(unix.AT_FDCWD, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		})
		if err != nil {
			return "", &os.PathError{Op: "chown", Path: op.Path, Err: err}
		}
	}
	store.Fault(FaultMidOp)
	typ := st.Mode & unix.S_IFMT
	if op.Attrs&store.AttrMode != 0 && typ != unix.S_IFLNK {
		// Not a symlink (checked above), so following is the same as not.
		err := sysx.Retry(func() error { return unix.Fchmodat(unix.AT_FDCWD, name, op.Mode&0o7777, 0) })
		if err != nil {
			return "", &os.PathError{Op: "chmod", Path: op.Path, Err: err}
		}
	}
	if op.Attrs&(store.AttrAtime|store.AttrMtime) != 0 {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if op.Attrs&store.AttrAtime != 0 {
			ts[0] = unix.Timespec{Sec: op.Atime.Sec, Nsec: op.Atime.Nsec}
		}
		if op.Attrs&store.AttrMtime != 0 {
			ts[1] = unix.Timespec{Sec: op.Mtime.Sec, Nsec: op.Mtime.Nsec}
		}
		err := sysx.Retry(func() error {
			return unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, unix.AT_SYMLINK_NOFOLLOW)
		})
		if err != nil {
			return "", &os.PathError{Op: "utimensat", Path: op.Path, Err: err}
		}
	}
	switch typ {
	case unix.S_IFREG:
		a.syncLater(op.Path, op.Ino)
	case unix.S_IFDIR:
		a.syncLater(op.Path, 0)
	default:
		// Symlinks, fifos and devices cannot be opened to fsync safely;
		// fsyncing the directory commits the file system's journal.
		a.syncLater(filepath.Dir(op.Path), 0)
	}
	return "", nil
}

func (a *applier) copyData(op store.RedoOp) (string, error) {
	st, why, err := expect(op.Path, op.Ino)
	if why != "" || err != nil {
		return why, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", &os.PathError{Op: "copy data to", Path: op.Path, Err: errors.New("not a regular file")}
	}
	if err := a.before(op); err != nil {
		return "", err
	}
	sname, dname, err := a.sys2(op.Src, op.Path)
	if err != nil {
		return "", err
	}
	src, err := os.OpenFile(sname, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.OpenFile(dname, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer dst.Close()
	// Check again on the descriptor: it is the descriptor that is written.
	var fst unix.Stat_t
	if err := sysx.Retry(func() error { return unix.Fstat(int(dst.Fd()), &fst) }); err != nil {
		return "", &os.PathError{Op: "fstat", Path: op.Path, Err: err}
	}
	if fst.Ino != op.Ino {
		return fmt.Sprintf("%s is inode %d, not %d", op.Path, fst.Ino, op.Ino), nil
	}
	if err := dst.Truncate(0); err != nil {
		return "", err
	}
	store.Fault(FaultMidOp)
	// io.Copy between two *os.File uses copy_file_range.
	if _, err := io.Copy(dst, src); err != nil {
		return "", fmt.Errorf("copy %s to %s: %w", op.Src, op.Path, err)
	}
	// The data's times are the staged copy's (set at copy-up, moved only
	// by writes): writing them back must not make them the commit time.
	var sst unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &sst); err != nil {
		return "", &os.PathError{Op: "fstat", Path: op.Src, Err: err}
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(dst.Fd())), []unix.Timespec{sst.Atim, sst.Mtim}, 0); err != nil {
		return "", &os.PathError{Op: "set times of", Path: op.Path, Err: err}
	}
	a.syncLater(op.Path, op.Ino)
	return "", nil
}

// addableFlags are the inode flags store.OpAddFlags sets.
const addableFlags = store.FlagImmutable | store.FlagAppend

// addFlags sets the inode flags op.Mode (chattr +i, +a) on the regular
// file or directory op.Path, keeping its other flags, or for
// store.OpClearFlags clears them; flags already so are done.
func (a *applier) addFlags(op store.RedoOp) (string, error) {
	st, why, err := expect(op.Path, op.Ino)
	if why != "" || err != nil {
		return why, err
	}
	typ := st.Mode & unix.S_IFMT
	if typ != unix.S_IFREG && typ != unix.S_IFDIR {
		return "", &os.PathError{Op: "set inode flags of", Path: op.Path, Err: errors.New("not a regular file or directory")}
	}
	name, err := a.sys(op.Path)
	if err != nil {
		return "", err
	}
	var fd int
	err = sysx.Retry(func() error {
		var err error
		fd, err = unix.Open(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOATIME|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return "", &os.PathError{Op: "open", Path: op.Path, Err: err}
	}
	defer unix.Close(fd)
	// Check again on the descriptor: it is the descriptor that is changed.
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		return "", &os.PathError{Op: "fstat", Path: op.Path, Err: err}
	}
	if fst.Ino != op.Ino {
		return fmt.Sprintf("%s is inode %d, not %d", op.Path, fst.Ino, op.Ino), nil
	}
	if err := a.before(op); err != nil {
		return "", err
	}
	set, clear := op.Mode, uint32(0)
	if op.Kind == store.OpClearFlags {
		set, clear = 0, op.Mode
	}
	if _, err := sysx.ChangeInodeFlags(fd, set, clear); err != nil {
		return "", &os.PathError{Op: "change inode flags of", Path: op.Path, Err: err}
	}
	if typ == unix.S_IFDIR {
		a.syncLater(op.Path, 0)
	} else {
		a.syncLater(op.Path, op.Ino)
	}
	return "", nil
}

func (a *applier) fsyncDir(op store.RedoOp) (string, error) {
	st, ok, err := lstat(op.Path)
	if err != nil {
		return "", err
	}
	if !ok {
		return op.Path + " is absent", nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", &os.PathError{Op: "fsync directory", Path: op.Path, Err: unix.ENOTDIR}
	}
	a.syncLater(op.Path, 0)
	return "", nil
}
