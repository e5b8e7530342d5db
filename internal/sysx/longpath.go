package sysx

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ShortPath returns a name for the absolute, clean path that path-based
// system calls accept even when path is PATH_MAX bytes or longer (the
// kernel refuses such a name with ENAMETOOLONG, but a process reaches
// deeper objects through relative paths, so a transaction can make them):
// path itself when it is short enough, else "/proc/self/fd/N/BASE", N an
// O_PATH descriptor on path's directory opened a part at a time. The final
// component is not resolved, so calls that do not follow it (lstat,
// lsetxattr, rename, unlink) act on it as on path. done closes the
// descriptor; errors are the errno of the walk (ENOENT, ENOTDIR, …).
func ShortPath(path string) (name string, done func(), err error) {
	if len(path) < unix.PathMax {
		return path, func() {}, nil
	}
	i := strings.LastIndexByte(path, '/')
	dir, base := path[:i], path[i+1:]
	fd, err := openDirChain(dir)
	if err != nil {
		return "", nil, err
	}
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + base, func() { unix.Close(fd) }, nil
}

// openDirChain opens the absolute directory path with O_PATH, resolving it
// in pieces shorter than PATH_MAX, each relative to the last.
func openDirChain(path string) (int, error) {
	fd, err := openPath(unix.AT_FDCWD, "/")
	if err != nil {
		return -1, err
	}
	rest := strings.TrimPrefix(path, "/")
	for rest != "" {
		piece := rest
		if len(piece) >= unix.PathMax {
			// Cut at the last '/' that keeps the piece short; a single
			// component longer than that is ENAMETOOLONG, as for Linux.
			cut := strings.LastIndexByte(piece[:unix.PathMax-1], '/')
			if cut <= 0 {
				unix.Close(fd)
				return -1, unix.ENAMETOOLONG
			}
			piece = piece[:cut]
		}
		rest = strings.TrimPrefix(rest[len(piece):], "/")
		next, err := openPath(fd, piece)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

func openPath(dirfd int, path string) (int, error) {
	var fd int
	err := Retry(func() error {
		var err error
		fd, err = unix.Openat(dirfd, path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, err
}
