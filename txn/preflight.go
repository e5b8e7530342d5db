package txn

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/store"
)

// Preflight checks, before the commit point, that no redo op will meet an
// immutable or append-only flag (chattr +i, +a) on the host: those refuse
// the renames, links, removals and attribute changes of write-through
// even to root, so a commit that met one would stop after its commit
// point, and recovery with it. The transaction's own staged objects carry
// none (CommitJournal moves them to OpAddFlags); a host object can have
// got one meanwhile — from outside, or through ioctl(FS_IOC_SETFLAGS) on a
// descriptor to an unchanged host object, which is not intercepted. Such
// a commit is refused instead (nothing is written), with an error that
// names the object.
//
// It looks at the host as it is now, which is the host at the start of
// the write-through for every path the ops do not change first; objects
// an earlier op makes are not there yet and are skipped.
func Preflight(ops []store.RedoOp) error {
	// The ops of one transaction mostly change a few directories: the
	// staging area's and the ones the command wrote into. Each is looked
	// at once (the host does not change under a preflight that only reads).
	dirs := make(map[string]error)
	for i, op := range ops {
		if op.Kind == store.OpClearFlags {
			// An undo clears the flags it adds first: the ops after it
			// may change the object.
			dirs["cleared\x00"+op.Path] = nil
		}
		if err := preflightOp(op, dirs); err != nil {
			return fmt.Errorf("cannot write through redo op %d (%s %s): %w; nothing was committed", i, op.Kind, op.Path, err)
		}
	}
	return nil
}

func preflightOp(op store.RedoOp, dirs map[string]error) error {
	touches := opKinds[op.Kind].touches
	if touches == nil {
		return nil // sets flags (last) or syncs: nothing a flag refuses
	}
	f := touches(op)
	dirsChanged, dirsShrunk, objects := f.dirsChanged, f.dirsShrunk, f.objects
	if f.replaced != "" && !cleared(dirs, f.replaced) {
		if st, ok := flagsOf(f.replaced); ok {
			// Replaced: removed from its directory.
			dirsShrunk = append(dirsShrunk, filepath.Dir(f.replaced))
			if err := flagsErr(f.replaced, st, unix.STATX_ATTR_IMMUTABLE|unix.STATX_ATTR_APPEND, "replaced"); err != nil {
				return err
			}
		}
	}
	for _, d := range dirsChanged {
		if err := checkDir(dirs, d, unix.STATX_ATTR_IMMUTABLE, "changed"); err != nil {
			return err
		}
	}
	for _, d := range dirsShrunk {
		if err := checkDir(dirs, d, unix.STATX_ATTR_APPEND, "have an entry removed"); err != nil {
			return err
		}
	}
	for _, o := range objects {
		if cleared(dirs, o) {
			continue
		}
		if err := check(o, op.Ino, unix.STATX_ATTR_IMMUTABLE|unix.STATX_ATTR_APPEND, "changed"); err != nil {
			return err
		}
	}
	return nil
}

// cleared reports whether an earlier op (OpClearFlags) clears p's flags.
func cleared(seen map[string]error, p string) bool {
	_, ok := seen["cleared\x00"+p]
	return ok
}

// checkDir is check for a directory, remembered in seen by path and
// question (a directory that may be changed may still refuse removals).
func checkDir(seen map[string]error, dir string, flags uint64, what string) error {
	if cleared(seen, dir) {
		return nil
	}
	key := what + "\x00" + dir
	if err, ok := seen[key]; ok {
		return err
	}
	err := check(dir, 0, flags, what)
	seen[key] = err
	return err
}

// check fails if path (when ino is not 0: only if it is that inode) has
// one of the flags.
func check(path string, ino uint64, flags uint64, what string) error {
	st, ok := flagsOf(path)
	if !ok || ino != 0 && st.Ino != ino {
		return nil
	}
	return flagsErr(path, st, flags, what)
}

// flagsErr fails if st, the statx of path, has one of the flags.
func flagsErr(path string, st unix.Statx_t, flags uint64, what string) error {
	switch have := st.Attributes & st.Attributes_mask & flags; {
	case have&unix.STATX_ATTR_IMMUTABLE != 0:
		return fmt.Errorf("%s is immutable (chattr +i) and cannot be %s", path, what)
	case have&unix.STATX_ATTR_APPEND != 0:
		return fmt.Errorf("%s is append-only (chattr +a) and cannot be %s", path, what)
	}
	return nil
}

// flagsOf stats path without following a final symlink; ok is false when
// it cannot (absent: made by an earlier op).
func flagsOf(path string) (unix.Statx_t, bool) {
	var st unix.Statx_t
	name, done, err := sysx.ShortPath(path)
	if err != nil {
		return st, false
	}
	defer done()
	err = sysx.Retry(func() error {
		return unix.Statx(unix.AT_FDCWD, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO, &st)
	})
	return st, err == nil
}
