package record

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// Replays bind these host trees into their root instead of making them
// from the recording: the kernel's own file systems, whose contents are
// not files a run could have been given (docs/semantics.md §10).
var boundTrees = []string{"/proc", "/dev", "/sys"}

// BoundTrees returns the host trees a replay binds into its root.
func BoundTrees() []string { return append([]string(nil), boundTrees...) }

func underBound(p string) bool {
	for _, b := range boundTrees {
		if p == b || strings.HasPrefix(p, b+"/") {
			return true
		}
	}
	return false
}

// ChangedError says that a path the run read changed on the host before
// it could be recorded.
type ChangedError struct{ Path string }

func (e *ChangedError) Error() string {
	return fmt.Sprintf("cannot record %s: it changed on the host after the run read it", e.Path)
}

// Capture records what reads, a run's read set, found on the host, as it
// is now (once the run has ended, before its transaction commits): the
// contents of the files the run read are stored in b. A file read whose
// identity, size or mtime is no longer what the run saw is a
// ChangedError. The program interpreters of the ELF executables the run
// read (PT_INTERP, which the kernel opens itself at exec) are added with
// the symlinks that lead to them.
func Capture(reads []store.ReadRecord, b Blobs) ([]File, error) {
	c := &capture{blobs: b, files: map[string]*File{}}
	for _, r := range reads {
		if underBound(r.Path) {
			continue
		}
		if err := c.read(r); err != nil {
			return nil, err
		}
	}
	for _, exe := range c.executables {
		interp, ok := interpreterOf(exe)
		if !ok {
			continue
		}
		if err := c.resolve(interp, 0); err != nil {
			return nil, err
		}
	}
	out := make([]File, 0, len(c.files))
	for _, f := range c.files {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

type capture struct {
	blobs       Blobs
	files       map[string]*File
	executables []string
}

// read records one record of the read set.
func (c *capture) read(r store.ReadRecord) error {
	if !r.Exists {
		c.files[r.Path] = &File{Path: r.Path, Type: TypeAbsent}
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(r.Path, &st); err != nil {
		return &ChangedError{r.Path}
	}
	if r.Ino != 0 && (st.Dev != r.Dev || st.Ino != r.Ino) ||
		(r.Data || r.Meta) && st.Mode&unix.S_IFMT == unix.S_IFREG && (st.Size != r.Size || st.Mtim.Sec != r.Mtime.Sec || st.Mtim.Nsec != r.Mtime.Nsec) {
		return &ChangedError{r.Path}
	}
	f, err := c.stat(r.Path, &st, r.Data)
	if err != nil {
		return err
	}
	if r.Listing && f.Type == TypeDir {
		if f.Listing, err = listing(r.Path); err != nil {
			return err
		}
	}
	c.files[r.Path] = f
	return nil
}

// stat records path, whose attributes are st, with its contents when data.
func (c *capture) stat(path string, st *unix.Stat_t, data bool) (*File, error) {
	f := &File{Path: path, Mode: st.Mode &^ unix.S_IFMT, UID: st.Uid, GID: st.Gid, Size: st.Size,
		MtimeSec: st.Mtim.Sec, MtimeNsec: st.Mtim.Nsec}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		f.Type = TypeDir
	case unix.S_IFLNK:
		f.Type = TypeSymlink
		t, err := os.Readlink(path)
		if err != nil {
			return nil, &ChangedError{path}
		}
		f.Target = t
	case unix.S_IFREG:
		f.Type = TypeFile
		if data {
			h, err := c.put(path, st)
			if err != nil {
				return nil, err
			}
			f.Blob = h
			c.executables = append(c.executables, path)
		}
	default:
		f.Type = TypeOther
	}
	return f, nil
}

// put stores the contents of the regular file path, checking that they
// are those of st.
func (c *capture) put(path string, st *unix.Stat_t) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("record %s: %w", path, err)
	}
	defer fh.Close()
	h, err := c.blobs.Put(fh)
	if err != nil {
		return "", fmt.Errorf("record %s: %w", path, err)
	}
	var after unix.Stat_t
	if err := unix.Fstat(int(fh.Fd()), &after); err != nil || after.Ino != st.Ino || after.Size != st.Size || after.Mtim != st.Mtim {
		return "", &ChangedError{path}
	}
	return h, nil
}

// resolve records path and everything its resolution goes through:
// each directory, each symlink and what it leads to, and the final file
// with its contents. depth bounds symlink loops as the kernel does.
func (c *capture) resolve(path string, depth int) error {
	if depth > 40 {
		return fmt.Errorf("record %s: too many levels of symbolic links", path)
	}
	comps := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	cur := "/"
	for i, comp := range comps {
		next := filepath.Join(cur, comp)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			if _, seen := c.files[next]; !seen {
				c.files[next] = &File{Path: next, Type: TypeAbsent}
			}
			return nil
		}
		last := i == len(comps)-1
		if _, seen := c.files[next]; !seen || last && c.files[next].Blob == "" && st.Mode&unix.S_IFMT == unix.S_IFREG {
			f, err := c.stat(next, &st, last)
			if err != nil {
				return err
			}
			c.files[next] = f
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target := c.files[next].Target
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			return c.resolve(filepath.Join(append([]string{target}, comps[i+1:]...)...), depth+1)
		}
		cur = next
	}
	return nil
}

// interpreterOf returns the program interpreter an ELF executable names.
func interpreterOf(path string) (string, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", false
		}
		return strings.TrimRight(string(b), "\x00"), true
	}
	return "", false
}

// listing reads directory dir's entries, with what a stand-in needs.
func listing(dir string) ([]Entry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, &ChangedError{dir}
	}
	out := make([]Entry, 0, len(ents))
	for _, e := range ents {
		var st unix.Stat_t
		p := filepath.Join(dir, e.Name())
		if err := unix.Lstat(p, &st); err != nil {
			return nil, &ChangedError{p}
		}
		en := Entry{Name: e.Name(), Mode: st.Mode &^ unix.S_IFMT, Size: st.Size}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			en.Type = TypeDir
		case unix.S_IFLNK:
			en.Type = TypeSymlink
			en.Target, _ = os.Readlink(p)
		case unix.S_IFREG:
			en.Type = TypeFile
		default:
			en.Type = TypeOther
		}
		out = append(out, en)
	}
	return out, nil
}

// MismatchError says a host path no longer holds what a recording read.
type MismatchError struct {
	Path string
	What string
}

func (e *MismatchError) Error() string { return fmt.Sprintf("%s: %s", e.Path, e.What) }

// Matches checks that the host holds what m recorded, path by path:
// absence, type, contents (by hash), size, symlink targets, listings;
// modes and owners. The first difference is a MismatchError.
func Matches(m *Manifest) error {
	for _, f := range m.Files {
		var st unix.Stat_t
		err := unix.Lstat(f.Path, &st)
		if f.Type == TypeAbsent {
			if err == nil {
				return &MismatchError{f.Path, "exists, and was absent"}
			}
			continue
		}
		if err != nil {
			return &MismatchError{f.Path, "is absent"}
		}
		now, err := (&capture{blobs: hashOnly{}, files: map[string]*File{}}).stat(f.Path, &st, f.Blob != "")
		if err != nil {
			return &MismatchError{f.Path, "cannot be read"}
		}
		switch {
		case now.Type != f.Type:
			return &MismatchError{f.Path, fmt.Sprintf("is a %s, and was a %s", now.Type, f.Type)}
		case now.Blob != f.Blob || f.Type == TypeFile && now.Size != f.Size:
			return &MismatchError{f.Path, "has other contents"}
		case now.Target != f.Target:
			return &MismatchError{f.Path, "leads elsewhere"}
		case now.Mode != f.Mode || now.UID != f.UID || now.GID != f.GID:
			return &MismatchError{f.Path, "has another mode or owner"}
		}
		if f.Listing != nil {
			l, err := listing(f.Path)
			if err != nil || !sameNames(l, f.Listing) {
				return &MismatchError{f.Path, "lists other entries"}
			}
		}
	}
	return nil
}

func sameNames(a, b []Entry) bool {
	names := map[string]string{}
	for _, e := range a {
		names[e.Name] = e.Type
	}
	if len(a) != len(b) {
		return false
	}
	for _, e := range b {
		if t, ok := names[e.Name]; !ok || t != e.Type {
			return false
		}
	}
	return true
}

// hashOnly hashes what it is given and keeps nothing.
type hashOnly struct{}

func (hashOnly) Put(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (hashOnly) Open(string) (io.ReadCloser, error) { return nil, os.ErrNotExist }
