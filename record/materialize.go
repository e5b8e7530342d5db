package record

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Materialize makes, in the empty directory root, the tree m recorded:
// its symlinks, then its directories, then its files (contents from b,
// or a file of the recorded size without data when the run only looked
// at it), then stand-ins for the entries of recorded listings the run
// did not look at, then the directories' times; owners, modes and mtimes
// as recorded. Every lookup stays inside root (RESOLVE_IN_ROOT), so that a
// recorded symlink never leads a write out of it. The trees a replay binds
// (BoundTrees) and the working directory are made as empty directories.
func Materialize(root string, m *Manifest, b Blobs) error {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open replay root: %w", err)
	}
	defer unix.Close(rfd)
	mk := maker{root: rfd, blobs: b}
	byType := func(t string) []File {
		var out []File
		for _, f := range m.Files {
			if f.Type == t && f.Path != "/" {
				out = append(out, f)
			}
		}
		return out
	}
	for _, f := range byType(TypeSymlink) {
		if err := mk.symlink(f.Path, f.Target); err != nil {
			return err
		}
	}
	for _, d := range append(BoundTrees(), m.Cwd) {
		if err := mk.mkdirAll(d); err != nil {
			return err
		}
	}
	dirs := byType(TypeDir)
	for _, f := range dirs {
		if err := mk.mkdirAll(f.Path); err != nil {
			return err
		}
	}
	for _, f := range byType(TypeFile) {
		if err := mk.file(f.Path, f.Blob, f.Size, f.Mode, f.UID, f.GID, f.MtimeSec, f.MtimeNsec); err != nil {
			return err
		}
	}
	for _, f := range dirs {
		for _, e := range f.Listing {
			if err := mk.standIn(filepath.Join(f.Path, e.Name), e); err != nil {
				return err
			}
		}
	}
	// Deepest first: making a directory's entries moves its mtime.
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].Path > dirs[j].Path })
	for _, f := range append(dirs, rootOf(m)...) {
		if err := mk.attrs(f.Path, f.Mode, f.UID, f.GID, f.MtimeSec, f.MtimeNsec); err != nil {
			return err
		}
	}
	return nil
}

func rootOf(m *Manifest) []File {
	for _, f := range m.Files {
		if f.Path == "/" && f.Type == TypeDir {
			return []File{f}
		}
	}
	return nil
}

// maker makes objects below root.
type maker struct {
	root  int
	blobs Blobs
}

func rel(p string) string {
	r := strings.TrimPrefix(filepath.Clean(p), "/")
	if r == "" {
		return "."
	}
	return r
}

// open opens path, resolved inside root.
func (mk maker) open(path string, flags uint64) (int, error) {
	return unix.Openat2(mk.root, rel(path), &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
}

// parent opens path's directory, made if missing.
func (mk maker) parent(path string) (int, string, error) {
	dir := filepath.Dir(filepath.Clean(path))
	if err := mk.mkdirAll(dir); err != nil {
		return -1, "", err
	}
	fd, err := mk.open(dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, "", fmt.Errorf("replay root: open %s: %w", dir, err)
	}
	return fd, filepath.Base(path), nil
}

// mkdirAll makes path and its missing parents (mode 0755 until attrs).
func (mk maker) mkdirAll(path string) error {
	comps := strings.Split(rel(path), "/")
	for i := range comps {
		if comps[i] == "." {
			continue
		}
		p := "/" + strings.Join(comps[:i+1], "/")
		fd, err := mk.open(p, unix.O_PATH|unix.O_DIRECTORY)
		if err == nil {
			unix.Close(fd)
			continue
		}
		if err != unix.ENOENT {
			return fmt.Errorf("replay root: %s: %w", p, err)
		}
		pfd, err := mk.open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("replay root: %s: %w", filepath.Dir(p), err)
		}
		err = unix.Mkdirat(pfd, comps[i], 0o755)
		unix.Close(pfd)
		if err != nil && err != unix.EEXIST {
			return fmt.Errorf("replay root: mkdir %s: %w", p, err)
		}
	}
	return nil
}

func (mk maker) symlink(path, target string) error {
	pfd, name, err := mk.parent(path)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Symlinkat(target, pfd, name); err != nil && err != unix.EEXIST {
		return fmt.Errorf("replay root: symlink %s: %w", path, err)
	}
	return nil
}

// file makes regular file path: blob's contents, or size bytes of none.
func (mk maker) file(path, blob string, size int64, mode, uid, gid uint32, sec, nsec int64) error {
	pfd, name, err := mk.parent(path)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == unix.EEXIST {
		return nil // a stand-in asked for twice
	}
	if err != nil {
		return fmt.Errorf("replay root: create %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if blob != "" {
		r, err := mk.blobs.Open(blob)
		if err != nil {
			return fmt.Errorf("replay root: %s: %w", path, err)
		}
		_, err = io.Copy(f, r)
		r.Close()
		if err != nil {
			return fmt.Errorf("replay root: write %s: %w", path, err)
		}
	} else if err := f.Truncate(size); err != nil {
		return fmt.Errorf("replay root: %s: %w", path, err)
	}
	if err := unix.Fchown(fd, int(uid), int(gid)); err != nil {
		return fmt.Errorf("replay root: chown %s: %w", path, err)
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("replay root: chmod %s: %w", path, err)
	}
	ts := []unix.Timespec{{Sec: sec, Nsec: nsec}, {Sec: sec, Nsec: nsec}}
	if err := unix.UtimesNanoAt(pfd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("replay root: times of %s: %w", path, err)
	}
	return nil
}

// standIn makes an entry of a recorded listing that nothing else made.
func (mk maker) standIn(path string, e Entry) error {
	if fd, err := mk.open(path, unix.O_PATH|unix.O_NOFOLLOW); err == nil {
		unix.Close(fd)
		return nil
	}
	switch e.Type {
	case TypeDir:
		return mk.mkdirAll(path)
	case TypeSymlink:
		return mk.symlink(path, e.Target)
	case TypeFile:
		return mk.file(path, "", e.Size, e.Mode, 0, 0, 0, 0)
	}
	return nil // a FIFO, socket or device is not made
}

// attrs gives directory path its recorded owner, mode and times.
func (mk maker) attrs(path string, mode, uid, gid uint32, sec, nsec int64) error {
	fd, err := mk.open(path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("replay root: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, int(uid), int(gid)); err != nil {
		return fmt.Errorf("replay root: chown %s: %w", path, err)
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("replay root: chmod %s: %w", path, err)
	}
	ts := []unix.Timespec{{Sec: sec, Nsec: nsec}, {Sec: sec, Nsec: nsec}}
	if err := unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("replay root: times of %s: %w", path, err)
	}
	return nil
}
