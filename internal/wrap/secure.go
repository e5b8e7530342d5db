package wrap

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Kind is what the last component of a secure path must be.
type Kind int

const (
	// RegularFile: a configuration, a txexec binary, an original.
	RegularFile Kind = iota
	// Directory: the wrapped directory.
	Directory
)

// SecurePath is the launcher's rule (launcher.c, secure_path) for what it
// trusts: path is absolute, reached without a symlink or a "." or ".."
// component, and it and every directory above it are owned by root and
// writable by no one else; a directory above may be writable by others if
// it is sticky (as /tmp is), since no one but root can then rename or
// remove root's entries in it. Wrap checks it first, so that it never
// makes a launcher that would refuse to run.
func SecurePath(path string, kind Kind) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("%s: not an absolute path", path)
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /: %w", err)
	}
	defer func() { unix.Close(fd) }()
	comps := strings.Split(strings.Trim(path, "/"), "/")
	if path == "/" {
		comps = nil
	}
	var st unix.Stat_t
	for _, comp := range comps {
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := trustedDir(&st); err != nil {
			return fmt.Errorf("%s: a directory above it is %w", path, err)
		}
		if comp == "" || comp == "." || comp == ".." {
			return fmt.Errorf("%s: not a canonical path", path)
		}
		nfd, err := unix.Openat(fd, comp, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		unix.Close(fd)
		fd = nfd
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("%s: a symlink", path)
	case kind == RegularFile && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("%s: not a regular file", path)
	case kind == Directory && st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s: not a directory", path)
	case st.Uid != 0:
		return fmt.Errorf("%s: not owned by root", path)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%s: writable by others than root", path)
	}
	return nil
}

// trustedDir is nil for a directory only root can change the entries of.
func trustedDir(st *unix.Stat_t) error {
	switch {
	case st.Uid != 0:
		return fmt.Errorf("not owned by root")
	case st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0:
		return fmt.Errorf("writable by others than root")
	}
	return nil
}
