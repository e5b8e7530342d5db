package vfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/proc"
)

// env is a transactional view over a host tree in a temporary directory,
// and a root caller whose cwd is that tree.
type env struct {
	t    *testing.T
	dir  string
	v    *Tx
	c    *Caller
	host *Host
}

// newEnv builds a host tree with build (run on the host, before the view
// exists) and opens a view over it.
func newEnv(t *testing.T, build func(dir string)) *env {
	t.Helper()
	dir := t.TempDir()
	if build != nil {
		build(dir)
	}
	return envOver(t, dir, t.TempDir())
}

// envOver is a view over the host tree dir with its staging area in
// staging, and a root caller whose cwd is dir.
func envOver(t *testing.T, dir, staging string) *env {
	t.Helper()
	host, err := NewHost()
	require.NoError(t, err)
	v, err := NewTx(host, staging, TxOptions{})
	require.NoError(t, err)
	t.Cleanup(v.Close)
	cwd, err := v.OpenDir(dir)
	require.NoError(t, err)
	root, err := v.OpenDir("/")
	require.NoError(t, err)
	c := &Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: cwd, Root: root, Umask: 0o022}
	return &env{t: t, dir: dir, v: v, c: c, host: host}
}

// as returns a caller with e's cwd and root and the given unprivileged ids.
func (e *env) as(uid, gid uint32) *Caller {
	cr := &proc.Cred{UID: uid, EUID: uid, SUID: uid, FSUID: uid, GID: gid, EGID: gid, SGID: gid, FSGID: gid}
	return &Caller{Tid: e.c.Tid, Tgid: e.c.Tgid, Cred: cr, Cwd: e.c.Cwd, Root: e.c.Root, Umask: 0o022}
}

// must fails the test at once on err: for setup steps.
func (e *env) must(err error, what string) {
	e.t.Helper()
	require.NoError(e.t, err, what)
}

// create makes a file with content in the view.
func (e *env) create(path, content string, mode uint32) {
	e.t.Helper()
	fd, err := e.v.Open(e.c, e.c.Cwd, path, OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, Mode: mode})
	e.must(err, "create "+path)
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(content))
	e.must(err, "write "+path)
}

// appendTo appends to a file of the view through a descriptor.
func (e *env) appendTo(path, content string) {
	e.t.Helper()
	fd, err := e.v.Open(e.c, e.c.Cwd, path, OpenHow{Flags: unix.O_WRONLY | unix.O_APPEND})
	e.must(err, "open "+path)
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(content))
	e.must(err, "append "+path)
}

// read returns a file's contents in the view.
func (e *env) read(path string) (string, error) {
	fd, err := e.v.Open(e.c, e.c.Cwd, path, OpenHow{Flags: unix.O_RDONLY})
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var buf bytes.Buffer
	b := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, b)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return buf.String(), nil
		}
		buf.Write(b[:n])
	}
}

// listing returns a directory's entries in the view as a reader of its
// descriptor sees them: the merged listing, or the kernel's own.
func (e *env) listing(path string) ([]Dirent, error) {
	fd, err := e.v.Open(e.c, e.c.Cwd, path, OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY})
	if err != nil {
		return nil, err
	}
	h, err := e.v.HandleOf(e.c, fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	defer h.Release()
	ents, merged, err := e.v.Listing(e.c, h)
	if err != nil {
		return nil, err
	}
	if !merged {
		ents, err = readHostDir(fd)
		if err != nil {
			return nil, err
		}
	}
	var out []Dirent
	for _, d := range ents {
		if d.Name != "." && d.Name != ".." {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// want is what the checker expects of one object of the view.
type want struct {
	typ    uint32 // S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO
	perm   uint32
	data   string   // regular files
	target string   // symlinks
	names  []string // directories: every entry but "." and ".."
	nlink  uint64
	// fstatNlinkIsHosts: a known deviation (docs/semantics.md) — a host
	// original whose link count the transaction changed but whose data it
	// did not is not copied up, so fstat of a descriptor on it shows the
	// host's count.
	fstatNlinkIsHosts bool
}

// checkObject is the conformance checker, in the spirit of fstest.TestFS:
// it looks at path through every call that can see it — stat, statx,
// access, readlink, open and fstat, read, the listing of the directory and
// of its parent — and reports every disagreement between them and with w,
// not just the first.
func checkObject(t *testing.T, e *env, path string, w want) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	st, err := e.v.Stat(e.c, e.c.Cwd, path, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		errorf("lstat: %v", err)
		return
	}
	if got := st.Mode & unix.S_IFMT; got != w.typ {
		errorf("type %o, want %o", got, w.typ)
		return
	}
	if w.typ != unix.S_IFLNK && st.Mode&0o7777 != w.perm {
		errorf("mode %o, want %o", st.Mode&0o7777, w.perm)
	}
	if w.nlink != 0 && st.Nlink != w.nlink {
		errorf("nlink %d, want %d", st.Nlink, w.nlink)
	}
	stx, err := e.v.Statx(e.c, e.c.Cwd, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS)
	if err != nil {
		errorf("statx: %v", err)
	} else {
		if stx.Ino != st.Ino || uint32(stx.Mode) != st.Mode&0xffff || uint64(stx.Nlink) != st.Nlink ||
			int64(stx.Size) != st.Size || stx.Uid != st.Uid || stx.Gid != st.Gid {
			errorf("statx (ino %d mode %o nlink %d size %d) disagrees with stat (ino %d mode %o nlink %d size %d)",
				stx.Ino, stx.Mode, stx.Nlink, stx.Size, st.Ino, st.Mode, st.Nlink, st.Size)
		}
		if stx.Mtime.Sec != st.Mtim.Sec || int64(stx.Mtime.Nsec) != st.Mtim.Nsec {
			errorf("statx mtime %v disagrees with stat mtime %v", stx.Mtime, st.Mtim)
		}
		if stx.Ctime.Sec != st.Ctim.Sec || int64(stx.Ctime.Nsec) != st.Ctim.Nsec || int64(stx.Blocks) != st.Blocks {
			errorf("statx ctime %v, blocks %d disagree with stat ctime %v, blocks %d", stx.Ctime, stx.Blocks, st.Ctim, st.Blocks)
		}
	}
	if err := e.v.Access(e.c, e.c.Cwd, path, unix.F_OK, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		errorf("access F_OK: %v", err)
	}
	// The parent's listing names it, with its inode number and type.
	parent, base := filepath.Split(path)
	if parent == "" {
		parent = "."
	}
	if ents, err := e.listing(parent); err != nil {
		errorf("list parent: %v", err)
	} else {
		found := false
		for _, d := range ents {
			if d.Name != base {
				continue
			}
			found = true
			if d.Ino != st.Ino {
				errorf("parent's listing says inode %d, stat says %d", d.Ino, st.Ino)
			}
			if d.Type != dtype(w.typ) {
				errorf("parent's listing says type %d, want %d", d.Type, dtype(w.typ))
			}
		}
		if !found {
			errorf("missing from its parent's listing")
		}
	}
	switch w.typ {
	case unix.S_IFLNK:
		got, err := e.v.Readlink(e.c, e.c.Cwd, path)
		if err != nil || got != w.target {
			errorf("readlink %q, %v; want %q", got, err, w.target)
		}
	case unix.S_IFREG:
		checkFile(e, path, st, w, errorf)
	case unix.S_IFDIR:
		checkDir(e, path, st, w, errorf)
	}
}

func checkFile(e *env, path string, st unix.Stat_t, w want, errorf func(string, ...any)) {
	if _, err := e.v.Readlink(e.c, e.c.Cwd, path); err != unix.EINVAL {
		errorf("readlink of a file: %v, want EINVAL", err)
	}
	fd, err := e.v.Open(e.c, e.c.Cwd, path, OpenHow{Flags: unix.O_RDONLY})
	if err != nil {
		errorf("open: %v", err)
		return
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		errorf("fstat: %v", err)
		return
	}
	if w.fstatNlinkIsHosts {
		fst.Nlink = st.Nlink
	}
	if fst.Ino != st.Ino || fst.Dev != st.Dev || fst.Mode != st.Mode || fst.Size != st.Size ||
		fst.Nlink != st.Nlink || fst.Uid != st.Uid || fst.Gid != st.Gid || fst.Mtim != st.Mtim {
		errorf("fstat(fd) (ino %d mode %o size %d nlink %d) disagrees with stat(path) (ino %d mode %o size %d nlink %d)",
			fst.Ino, fst.Mode, fst.Size, fst.Nlink, st.Ino, st.Mode, st.Size, st.Nlink)
	}
	data, err := e.read(path)
	if err != nil || data != w.data {
		errorf("read %q, %v; want %q", data, err, w.data)
	}
	if int64(len(data)) != st.Size {
		errorf("size %d, read %d bytes", st.Size, len(data))
	}
	if err := e.v.Access(e.c, e.c.Cwd, path, unix.R_OK|unix.W_OK, 0); err != nil {
		errorf("access R_OK|W_OK as root: %v", err)
	}
	// Access as an unprivileged user follows the mode bits.
	user := e.as(4242, 4242)
	err = e.v.Access(user, e.c.Cwd, path, unix.R_OK, 0)
	if readable := st.Mode&0o004 != 0; readable != (err == nil) {
		errorf("access R_OK as other user: %v with mode %o", err, st.Mode&0o777)
	}
}

func checkDir(e *env, path string, st unix.Stat_t, w want, errorf func(string, ...any)) {
	ents, err := e.listing(path)
	if err != nil {
		errorf("list: %v", err)
		return
	}
	var names []string
	subdirs := 0
	for _, d := range ents {
		names = append(names, d.Name)
		cst, err := e.v.Stat(e.c, e.c.Cwd, path+"/"+d.Name, unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			errorf("listed %q, which stat cannot find: %v", d.Name, err)
			continue
		}
		if cst.Ino != d.Ino {
			errorf("listed %q as inode %d, stat says %d", d.Name, d.Ino, cst.Ino)
		}
		if d.Type != dtype(cst.Mode&unix.S_IFMT) {
			errorf("listed %q as type %d, stat says mode %o", d.Name, d.Type, cst.Mode)
		}
		if cst.Mode&unix.S_IFMT == unix.S_IFDIR {
			subdirs++
		}
	}
	if want := append([]string(nil), w.names...); !equalNames(names, want) {
		errorf("entries %q, want %q", names, want)
	}
	if st.Nlink != uint64(2+subdirs) {
		errorf("nlink %d with %d subdirectories", st.Nlink, subdirs)
	}
	// A descriptor on the directory is the directory: same identity. (Its
	// other fstat fields are the host directory's: docs/semantics.md.)
	fd, err := e.v.Open(e.c, e.c.Cwd, path, OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY})
	if err != nil {
		errorf("open: %v", err)
		return
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil || fst.Ino != st.Ino || fst.Dev != st.Dev {
		errorf("fstat(fd) inode %d, %v; stat says %d", fst.Ino, err, st.Ino)
	}
	for _, n := range w.names {
		if _, err := e.v.Stat(e.c, e.c.Cwd, path+"/"+n, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			errorf("lookup of listed name %q: %v", n, err)
		}
	}
	if _, err := e.v.Stat(e.c, e.c.Cwd, path+"/no-such-name", 0); err != unix.ENOENT {
		errorf("lookup of a missing name: %v, want ENOENT", err)
	}
}

func equalNames(a, b []string) bool {
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// hostTree is the standard host tree of these tests.
func hostTree(dir string) {
	w := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), mode); err != nil {
			panic(err)
		}
		if err := os.Chmod(filepath.Join(dir, p), mode); err != nil {
			panic(err)
		}
	}
	for _, d := range []string{"d", "d/sub", "e", "gone"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			panic(err)
		}
	}
	w("f", "host file\n", 0o644)
	w("g", "to be changed\n", 0o640)
	w("d/x", "in d\n", 0o600)
	w("d/sub/y", "deep\n", 0o644)
	w("gone/old", "old child\n", 0o644)
	w("w", "whited out\n", 0o644)
	w("linked", "two names\n", 0o644)
	if err := os.Link(filepath.Join(dir, "linked"), filepath.Join(dir, "d/linked2")); err != nil {
		panic(err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "sl")); err != nil {
		panic(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		panic(err)
	}
}

// TestConformance runs the checker against every kind of backing object.
func TestConformance(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		path  string
		want  want
	}{
		{"host file", nil, "f", want{typ: unix.S_IFREG, perm: 0o644, data: "host file\n", nlink: 1}},
		{"host dir", nil, "d", want{typ: unix.S_IFDIR, perm: 0o755, names: []string{"linked2", "sub", "x"}, nlink: 3}},
		{"host symlink", nil, "sl", want{typ: unix.S_IFLNK, target: "f", nlink: 1}},
		{"host fifo", nil, "fifo", want{typ: unix.S_IFIFO, perm: 0o644, nlink: 1}},
		{"host hard link", nil, "d/linked2", want{typ: unix.S_IFREG, perm: 0o644, data: "two names\n", nlink: 2}},
		{"staged by write", func(e *env) { e.appendTo("g", "more\n") },
			"g", want{typ: unix.S_IFREG, perm: 0o640, data: "to be changed\nmore\n", nlink: 1}},
		{"staged by chmod", func(e *env) { e.must(e.v.Chmod(e.c, e.c.Cwd, "g", 0o604, 0), "chmod") },
			"g", want{typ: unix.S_IFREG, perm: 0o604, data: "to be changed\n", nlink: 1}},
		{"staged hard link", func(e *env) { e.appendTo("linked", "x\n") },
			"d/linked2", want{typ: unix.S_IFREG, perm: 0o644, data: "two names\nx\n", nlink: 2}},
		{"staged hard link, other name", func(e *env) { e.appendTo("d/linked2", "y\n") },
			"linked", want{typ: unix.S_IFREG, perm: 0o644, data: "two names\ny\n", nlink: 2}},
		{"staged dir by chmod", func(e *env) { e.must(e.v.Chmod(e.c, e.c.Cwd, "d", 0o700, 0), "chmod") },
			"d", want{typ: unix.S_IFDIR, perm: 0o700, names: []string{"linked2", "sub", "x"}, nlink: 3}},
		{"staged dir, child listed", func(e *env) { e.must(e.v.Chmod(e.c, e.c.Cwd, "d", 0o700, 0), "chmod") },
			"d/x", want{typ: unix.S_IFREG, perm: 0o600, data: "in d\n", nlink: 1}},
		{"staged symlink by chown", func(e *env) {
			e.must(e.v.Chown(e.c, e.c.Cwd, "sl", 7, 7, unix.AT_SYMLINK_NOFOLLOW), "chown")
		}, "sl", want{typ: unix.S_IFLNK, target: "f", nlink: 1}},
		{"created file", func(e *env) { e.create("new", "created\n", 0o666) },
			"new", want{typ: unix.S_IFREG, perm: 0o644, data: "created\n", nlink: 1}},
		{"created file in created dir", func(e *env) {
			e.must(e.v.Mkdir(e.c, e.c.Cwd, "nd", 0o777), "mkdir")
			e.create("nd/f", "x", 0o600)
		}, "nd/f", want{typ: unix.S_IFREG, perm: 0o600, data: "x", nlink: 1}},
		{"created dir", func(e *env) {
			e.must(e.v.Mkdir(e.c, e.c.Cwd, "nd", 0o777), "mkdir")
			e.must(e.v.Mkdir(e.c, e.c.Cwd, "nd/s", 0o777), "mkdir")
			e.create("nd/f", "x", 0o600)
		}, "nd", want{typ: unix.S_IFDIR, perm: 0o755, names: []string{"f", "s"}, nlink: 3}},
		{"created symlink", func(e *env) { e.must(e.v.Symlink(e.c, "d/x", e.c.Cwd, "nl"), "symlink") },
			"nl", want{typ: unix.S_IFLNK, target: "d/x", nlink: 1}},
		{"created fifo", func(e *env) { e.must(e.v.Mknod(e.c, e.c.Cwd, "nf", unix.S_IFIFO|0o600, 0), "mkfifo") },
			"nf", want{typ: unix.S_IFIFO, perm: 0o600, nlink: 1}},
		{"created hard link", func(e *env) {
			e.create("new", "n", 0o644)
			e.must(e.v.Link(e.c, e.c.Cwd, "new", e.c.Cwd, "d/new2", 0), "link")
		}, "d/new2", want{typ: unix.S_IFREG, perm: 0o644, data: "n", nlink: 2}},
		{"hard link to a host file", func(e *env) {
			e.must(e.v.Link(e.c, e.c.Cwd, "f", e.c.Cwd, "e/f2", 0), "link")
		}, "e/f2", want{typ: unix.S_IFREG, perm: 0o644, data: "host file\n", nlink: 2, fstatNlinkIsHosts: true}},
		{"host file that lost a hard link", func(e *env) {
			e.must(e.v.Unlink(e.c, e.c.Cwd, "linked", 0), "unlink")
		}, "d/linked2", want{typ: unix.S_IFREG, perm: 0o644, data: "two names\n", nlink: 1, fstatNlinkIsHosts: true}},
		{"hard link to a host file, then written", func(e *env) {
			e.must(e.v.Link(e.c, e.c.Cwd, "f", e.c.Cwd, "e/f2", 0), "link")
			e.appendTo("f", "more\n")
		}, "e/f2", want{typ: unix.S_IFREG, perm: 0o644, data: "host file\nmore\n", nlink: 2}},
		{"renamed host file", func(e *env) { e.must(e.v.Rename(e.c, e.c.Cwd, "f", e.c.Cwd, "d/f-moved", 0), "rename") },
			"d/f-moved", want{typ: unix.S_IFREG, perm: 0o644, data: "host file\n", nlink: 1}},
		{"renamed host dir", func(e *env) { e.must(e.v.Rename(e.c, e.c.Cwd, "d", e.c.Cwd, "e/d2", 0), "rename") },
			"e/d2", want{typ: unix.S_IFDIR, perm: 0o755, names: []string{"linked2", "sub", "x"}, nlink: 3}},
		{"dir that lost a subdir", func(e *env) { e.must(e.v.Rename(e.c, e.c.Cwd, "d/sub", e.c.Cwd, "e/sub", 0), "rename") },
			"d", want{typ: unix.S_IFDIR, perm: 0o755, names: []string{"linked2", "x"}, nlink: 2}},
		{"dir that gained a subdir", func(e *env) { e.must(e.v.Rename(e.c, e.c.Cwd, "d/sub", e.c.Cwd, "e/sub", 0), "rename") },
			"e", want{typ: unix.S_IFDIR, perm: 0o755, names: []string{"sub"}, nlink: 3}},
		{"whited out then recreated file", func(e *env) {
			e.must(e.v.Unlink(e.c, e.c.Cwd, "w", 0), "unlink")
			e.create("w", "again\n", 0o600)
		}, "w", want{typ: unix.S_IFREG, perm: 0o600, data: "again\n", nlink: 1}},
		{"whited out then recreated dir", func(e *env) {
			e.must(e.v.Unlink(e.c, e.c.Cwd, "gone/old", 0), "unlink")
			e.must(e.v.Unlink(e.c, e.c.Cwd, "gone", unix.AT_REMOVEDIR), "rmdir")
			e.must(e.v.Mkdir(e.c, e.c.Cwd, "gone", 0o700), "mkdir")
		}, "gone", want{typ: unix.S_IFDIR, perm: 0o700, names: nil, nlink: 2}},
		{"file replaced by a dir", func(e *env) {
			e.must(e.v.Unlink(e.c, e.c.Cwd, "w", 0), "unlink")
			e.must(e.v.Mkdir(e.c, e.c.Cwd, "w", 0o755), "mkdir")
			e.create("w/in", "i", 0o644)
		}, "w", want{typ: unix.S_IFDIR, perm: 0o755, names: []string{"in"}, nlink: 2}},
		{"dir replaced by a file", func(e *env) {
			e.must(e.v.Unlink(e.c, e.c.Cwd, "gone/old", 0), "unlink")
			e.must(e.v.Unlink(e.c, e.c.Cwd, "gone", unix.AT_REMOVEDIR), "rmdir")
			e.create("gone", "file now", 0o644)
		}, "gone", want{typ: unix.S_IFREG, perm: 0o644, data: "file now", nlink: 1}},
		{"host dir after every kind of change", func(e *env) {
			e.must(e.v.Unlink(e.c, e.c.Cwd, "d/x", 0), "unlink")
			e.create("d/new", "n", 0o644)
			e.appendTo("d/linked2", "!")
			e.must(e.v.Mkdir(e.c, e.c.Cwd, "d/nd", 0o755), "mkdir")
			e.must(e.v.Rename(e.c, e.c.Cwd, "f", e.c.Cwd, "d/f", 0), "rename")
			e.must(e.v.Symlink(e.c, "x", e.c.Cwd, "d/x"), "symlink")
		}, "d", want{typ: unix.S_IFDIR, perm: 0o755, nlink: 4,
			names: []string{"f", "linked2", "nd", "new", "sub", "x"}}},
		{"host dir listed before a hard link in it was written", func(e *env) {
			_, err := e.listing("d")
			e.must(err, "list")
			e.appendTo("linked", "!")
		}, "d", want{typ: unix.S_IFDIR, perm: 0o755, nlink: 3, names: []string{"linked2", "sub", "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, hostTree)
			before := manifest(t, e.dir)
			if tt.setup != nil {
				tt.setup(e)
			}
			checkObject(t, e, tt.path, tt.want)
			assert.Equal(t, before, manifest(t, e.dir), "the host tree changed")
		})
	}
}

// TestReaddirWhileDeleting reads a large host directory a few entries at a
// time, as getdents with a small buffer does, removing each entry it sees:
// every entry is seen exactly once.
func TestReaddirWhileDeleting(t *testing.T) {
	const n = 2000
	e := newEnv(t, func(dir string) {
		if err := os.Mkdir(filepath.Join(dir, "big"), 0o755); err != nil {
			panic(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, "big", fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
				panic(err)
			}
		}
	})
	fd, err := e.v.Open(e.c, e.c.Cwd, "big", OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY})
	require.NoError(t, err)
	h, err := e.v.HandleOf(e.c, fd)
	require.NoError(t, err)
	defer h.Release()
	seen := map[string]int{}
	pos := uint64(0)
	for step := 0; ; step++ {
		ents, merged, err := e.v.Listing(e.c, h)
		require.NoError(t, err)
		require.True(t, merged)
		var batch []Dirent
		for _, d := range ents {
			if d.Off > pos && len(batch) < 7 {
				batch = append(batch, d)
			}
		}
		if len(batch) == 0 {
			break
		}
		for _, d := range batch {
			seen[d.Name]++
			if d.Name != "." && d.Name != ".." {
				require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "big/"+d.Name, 0))
			}
			if step%5 == 0 {
				// Entries made meanwhile may or may not be seen (POSIX);
				// none may make the reader skip or repeat others.
				e.create(fmt.Sprintf("big/new%d", step), "", 0o644)
			}
		}
		pos = batch[len(batch)-1].Off
	}
	for i := range n {
		name := fmt.Sprintf("f%04d", i)
		assert.Equal(t, 1, seen[name], name)
	}
	for name, k := range seen {
		assert.Equal(t, 1, k, "%s seen %d times", name, k)
	}
}

// TestResolveFlags checks the walk under openat2's RESOLVE_* flags.
func TestResolveFlags(t *testing.T) {
	e := newEnv(t, func(dir string) {
		hostTree(dir)
		for link, target := range map[string]string{"d/up": "../f", "d/down": "sub/y", "d/abs": "/etc/hostname",
			"d/rooted": "/x", "ld": "d"} {
			if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
				panic(err)
			}
		}
	})
	d, err := e.v.Open(e.c, e.c.Cwd, "d", OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY})
	require.NoError(t, err)
	dh, err := e.v.HandleOf(e.c, d)
	require.NoError(t, err)
	defer dh.Release()
	const (
		beneath = unix.RESOLVE_BENEATH
		inRoot  = unix.RESOLVE_IN_ROOT
		noSym   = unix.RESOLVE_NO_SYMLINKS
		noMagic = unix.RESOLVE_NO_MAGICLINKS
		noXdev  = unix.RESOLVE_NO_XDEV
	)
	tests := []struct {
		name    string
		at      *Handle
		path    string
		resolve uint64
		flags   uint64
		err     error
	}{
		{"plain", e.c.Cwd, "f", 0, 0, nil},
		{"no symlinks, final", e.c.Cwd, "sl", noSym, 0, unix.ELOOP},
		{"no symlinks, middle", e.c.Cwd, "ld/x", noSym, 0, unix.ELOOP},
		{"no symlinks, none", e.c.Cwd, "d/x", noSym, 0, nil},
		{"no magic links, plain symlink", e.c.Cwd, "sl", noMagic, 0, nil},
		{"beneath, inside", dh, "sub/y", beneath, 0, nil},
		{"beneath, dotdot inside", dh, "sub/../x", beneath, 0, nil},
		{"beneath, escape", dh, "../f", beneath, 0, unix.EXDEV},
		{"beneath, dotdot at root", dh, "..", beneath, 0, unix.EXDEV},
		{"beneath, symlink up", dh, "up", beneath, 0, unix.EXDEV},
		{"beneath, symlink down", dh, "down", beneath, 0, nil},
		{"beneath, absolute symlink", dh, "abs", beneath, 0, unix.EXDEV},
		{"in root, escape stays", dh, "../../x", inRoot, 0, nil},
		{"in root, symlink up stays", dh, "up", inRoot, 0, unix.ENOENT},
		{"in root, absolute symlink", dh, "rooted", inRoot, 0, nil},
		{"beneath and in root", dh, "x", beneath | inRoot, 0, unix.EINVAL},
		{"unknown flag", dh, "x", 0x40, 0, unix.EINVAL},
		{"no xdev, same mount", e.c.Cwd, "d/x", noXdev, 0, nil},
		{"no xdev, absolute symlink", e.c.Cwd, "d/abs", noXdev, 0, unix.EXDEV},
		{"no xdev, into /proc", e.c.Cwd, "/proc/self/status", noXdev, 0, unix.EXDEV},
		{"cached", e.c.Cwd, "f", resolveCached, 0, nil},
		{"cached create", e.c.Cwd, "newfile", resolveCached, unix.O_CREAT | unix.O_WRONLY, unix.EAGAIN},
		{"beneath create", dh, "new", beneath, unix.O_CREAT | unix.O_WRONLY, nil},
		{"beneath create outside", dh, "../new", beneath, unix.O_CREAT | unix.O_WRONLY, unix.EXDEV},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags := tt.flags
			if flags == 0 {
				flags = unix.O_RDONLY
			}
			fd, err := e.v.Open(e.c, tt.at, tt.path, OpenHow{Flags: flags, Mode: 0o644, Resolve: tt.resolve})
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			unix.Close(fd)
		})
	}
	_, err = e.v.Stat(e.c, e.c.Cwd, "d/new", 0)
	assert.NoError(t, err, "create beneath made d/new")
}

// TestRenameFlags checks renameat2's NOREPLACE, EXCHANGE and WHITEOUT.
func TestRenameFlags(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		flags    uint
		err      error
		check    func(t *testing.T, e *env)
	}{
		{"noreplace over a file", "f", "g", unix.RENAME_NOREPLACE, unix.EEXIST, nil},
		{"noreplace over a dangling symlink", "f", "sl-dangling", unix.RENAME_NOREPLACE, unix.EEXIST, nil},
		{"noreplace to a new name", "f", "f2", unix.RENAME_NOREPLACE, nil, func(t *testing.T, e *env) {
			data, err := e.read("f2")
			assert.NoError(t, err)
			assert.Equal(t, "host file\n", data)
		}},
		{"exchange file and dir", "f", "d", unix.RENAME_EXCHANGE, nil, func(t *testing.T, e *env) {
			checkObject(t, e, "d", want{typ: unix.S_IFREG, perm: 0o644, data: "host file\n", nlink: 1})
			checkObject(t, e, "f", want{typ: unix.S_IFDIR, perm: 0o755, names: []string{"linked2", "sub", "x"}, nlink: 3})
		}},
		{"exchange with a missing name", "f", "nope", unix.RENAME_EXCHANGE, unix.ENOENT, nil},
		{"exchange and noreplace", "f", "g", unix.RENAME_EXCHANGE | unix.RENAME_NOREPLACE, unix.EINVAL, nil},
		{"exchange and whiteout", "f", "g", unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT, unix.EINVAL, nil},
		{"unknown flag", "f", "g", 8, unix.EINVAL, nil},
		{"whiteout", "f", "d/f", unix.RENAME_WHITEOUT, nil, func(t *testing.T, e *env) {
			st, err := e.v.Stat(e.c, e.c.Cwd, "f", unix.AT_SYMLINK_NOFOLLOW)
			require.NoError(t, err)
			assert.Equal(t, uint32(unix.S_IFCHR), st.Mode&unix.S_IFMT)
			assert.Zero(t, st.Rdev)
			checkObject(t, e, "d/f", want{typ: unix.S_IFREG, perm: 0o644, data: "host file\n", nlink: 1})
		}},
		{"dir into its own subdir", "d", "d/sub/d", 0, unix.EINVAL, nil},
		{"dir over a non-empty dir", "e", "d", 0, unix.ENOTEMPTY, nil},
		{"file onto itself", "f", "f", 0, nil, nil},
		{"onto another name of itself", "linked", "d/linked2", 0, nil, func(t *testing.T, e *env) {
			checkObject(t, e, "linked", want{typ: unix.S_IFREG, perm: 0o644, data: "two names\n", nlink: 2})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(dir string) {
				hostTree(dir)
				if err := os.Symlink("nowhere", filepath.Join(dir, "sl-dangling")); err != nil {
					panic(err)
				}
			})
			before := manifest(t, e.dir)
			err := e.v.Rename(e.c, e.c.Cwd, tt.old, e.c.Cwd, tt.new, tt.flags)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
			} else {
				require.NoError(t, err)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
			assert.Equal(t, before, manifest(t, e.dir))
		})
	}
}

// TestSparseCopyUp: copying up a sparse host file keeps its holes.
func TestSparseCopyUp(t *testing.T) {
	e := newEnv(t, func(dir string) {
		f, err := os.Create(filepath.Join(dir, "sparse"))
		if err != nil {
			panic(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("data"), 1<<30); err != nil {
			panic(err)
		}
	})
	e.appendTo("sparse", "more")
	st, err := e.v.Stat(e.c, e.c.Cwd, "sparse", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30+8), st.Size)
	assert.Less(t, st.Blocks*512, int64(1<<20), "the copy-up allocated the holes")
	fd, err := e.v.Open(e.c, e.c.Cwd, "sparse", OpenHow{Flags: unix.O_RDONLY})
	require.NoError(t, err)
	defer unix.Close(fd)
	buf := make([]byte, 8)
	_, err = unix.Pread(fd, buf, 1<<30)
	require.NoError(t, err)
	assert.Equal(t, "datamore", string(buf))
}

// TestTrailingSlash: a trailing slash follows a final symlink for lookups
// but not for calls that act on the name, which fail as Linux does.
func TestTrailingSlash(t *testing.T) {
	e := newEnv(t, func(dir string) {
		hostTree(dir)
		if err := os.Symlink("d", filepath.Join(dir, "ld")); err != nil {
			panic(err)
		}
		if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
			panic(err)
		}
	})
	c, cwd := e.c, e.c.Cwd
	tests := []struct {
		name string
		do   func() error
		err  error
	}{
		{"stat follows", func() error { _, err := e.v.Stat(c, cwd, "ld/", unix.AT_SYMLINK_NOFOLLOW); return err }, nil},
		{"unlink of a symlink to a dir", func() error { return e.v.Unlink(c, cwd, "ld/", 0) }, unix.ENOTDIR},
		{"rmdir of a symlink to a dir", func() error { return e.v.Unlink(c, cwd, "ld/", unix.AT_REMOVEDIR) }, unix.ENOTDIR},
		{"unlink of a file", func() error { return e.v.Unlink(c, cwd, "f/", 0) }, unix.ENOTDIR},
		{"unlink of a dir", func() error { return e.v.Unlink(c, cwd, "e/", 0) }, unix.EISDIR},
		{"rename a symlink to a dir", func() error { return e.v.Rename(c, cwd, "ld/", cwd, "x", 0) }, unix.ENOTDIR},
		{"rename a file to a slash name", func() error { return e.v.Rename(c, cwd, "f", cwd, "x/", 0) }, unix.ENOTDIR},
		{"mkdir over a file", func() error { return e.v.Mkdir(c, cwd, "f/", 0o755) }, unix.EEXIST},
		{"mkdir over a dangling symlink", func() error { return e.v.Mkdir(c, cwd, "dangling/", 0o755) }, unix.EEXIST},
		{"mknod with a slash", func() error { return e.v.Mknod(c, cwd, "p/", unix.S_IFIFO|0o644, 0) }, unix.ENOENT},
		{"symlink with a slash", func() error { return e.v.Symlink(c, "f", cwd, "s/") }, unix.ENOENT},
		{"link with a slash", func() error { return e.v.Link(c, cwd, "f", cwd, "h/", 0) }, unix.ENOENT},
		{"mkdir with a slash", func() error { return e.v.Mkdir(c, cwd, "nd/", 0o755) }, nil},
		{"rmdir with a slash", func() error { return e.v.Unlink(c, cwd, "nd/", unix.AT_REMOVEDIR) }, nil},
		{"rename dirs with slashes", func() error { return e.v.Rename(c, cwd, "e/", cwd, "e2/", 0) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if tt.err == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.err)
			}
		})
	}
	checkObject(t, e, "ld", want{typ: unix.S_IFLNK, target: "d", nlink: 1})
	checkObject(t, e, "d", want{typ: unix.S_IFDIR, perm: 0o755, names: []string{"linked2", "sub", "x"}, nlink: 3})
}

// TestPathDescriptors: O_PATH descriptors on objects the kernel cannot
// hand over as such (symlinks, FIFOs, unreadable files) stand for them in
// every call the view serves.
func TestPathDescriptors(t *testing.T) {
	e := newEnv(t, func(dir string) {
		hostTree(dir)
		if err := os.Chmod(filepath.Join(dir, "d/x"), 0o600); err != nil {
			panic(err)
		}
	})
	user := e.as(4242, 4242) // not d/x's owner, no capabilities
	tests := []struct {
		name   string
		c      *Caller
		path   string
		flags  uint64
		typ    uint32
		target string
	}{
		{"symlink", e.c, "sl", unix.O_PATH | unix.O_NOFOLLOW, unix.S_IFLNK, "f"},
		{"fifo", e.c, "fifo", unix.O_PATH, unix.S_IFIFO, ""},
		{"unreadable file", user, "d/x", unix.O_PATH, unix.S_IFREG, ""},
		{"readable file", e.c, "f", unix.O_PATH, unix.S_IFREG, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fd, err := e.v.Open(tt.c, e.c.Cwd, tt.path, OpenHow{Flags: tt.flags})
			require.NoError(t, err)
			h, err := e.v.HandleOf(tt.c, fd)
			require.NoError(t, err)
			defer h.Release()
			st, err := e.v.Stat(tt.c, h, "", unix.AT_EMPTY_PATH)
			require.NoError(t, err)
			want, err := e.v.Stat(e.c, e.c.Cwd, tt.path, unix.AT_SYMLINK_NOFOLLOW)
			require.NoError(t, err)
			assert.Equal(t, tt.typ, st.Mode&unix.S_IFMT)
			assert.Equal(t, want.Ino, st.Ino)
			if tt.target != "" {
				got, err := e.v.Readlink(tt.c, h, "")
				assert.NoError(t, err)
				assert.Equal(t, tt.target, got)
			}
		})
	}
	_, err := e.v.Open(e.c, e.c.Cwd, "sl", OpenHow{Flags: unix.O_NOFOLLOW | unix.O_RDONLY})
	assert.ErrorIs(t, err, unix.ELOOP, "O_NOFOLLOW without O_PATH")
	_, err = e.v.Open(e.c, e.c.Cwd, "sl", OpenHow{Flags: unix.O_NOFOLLOW | unix.O_PATH | unix.O_DIRECTORY})
	assert.ErrorIs(t, err, unix.ENOTDIR, "O_DIRECTORY on a symlink")
}

// TestListingCacheFollowsChanges: a directory's merged listing is built
// once and reused while nothing changes, and every change the transaction
// makes — a new name, a removal, a copy-up that gives a file its staged
// inode number, a rename out — shows in the next listing.
func TestListingCacheFollowsChanges(t *testing.T) {
	e := newEnv(t, func(dir string) {
		for _, n := range []string{"a", "b"} {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
				panic(err)
			}
		}
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
			panic(err)
		}
	})
	names := func() map[string]uint64 {
		ents, err := e.listing(".")
		require.NoError(t, err)
		m := map[string]uint64{}
		for _, d := range ents {
			m[d.Name] = d.Ino
		}
		return m
	}
	inoOf := func(path string) uint64 {
		st, err := e.v.Stat(e.c, e.c.Cwd, path, unix.AT_SYMLINK_NOFOLLOW)
		require.NoError(t, err)
		return st.Ino
	}

	first := names()
	require.Len(t, first, 3)
	require.Equal(t, first, names(), "unchanged: the same listing")

	e.create("c", "c", 0o644)
	require.Contains(t, names(), "c")

	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "b", 0))
	require.NotContains(t, names(), "b")

	e.appendTo("a", "more") // copy-up: a gets its staged object's inode
	require.Equal(t, inoOf("a"), names()["a"])
	require.NotEqual(t, first["a"], names()["a"])

	require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "c", e.c.Cwd, "sub/c", 0))
	require.NotContains(t, names(), "c")
	ents, err := e.listing("sub")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	require.Equal(t, "c", ents[0].Name)
}

// TestChownKeepKeep: chown to (-1, -1) changes no owner. It needs no copy-up
// of a host directory or a hard-linked host file; on a file it clears the
// set-ID bits a chown clears (a mode change: EPERM for a non-owner).
func TestChownKeepKeep(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
		require.NoError(t, os.Link(filepath.Join(dir, "f"), filepath.Join(dir, "f2")))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "s"), []byte("x"), 0o644))
		require.NoError(t, unix.Chmod(filepath.Join(dir, "s"), 0o4755))
	})
	const keep = ^uint32(0)
	for _, p := range []string{"d", "f"} {
		require.NoError(t, e.v.Chown(e.c, e.c.Cwd, p, keep, keep, 0), p)
	}
	assert.ErrorIs(t, e.v.Chown(e.as(1000, 1000), e.c.Cwd, "s", keep, keep, 0), unix.EPERM)
	require.NoError(t, e.v.Chown(e.c, e.c.Cwd, "s", keep, keep, 0))
	st, err := e.v.Stat(e.c, e.c.Cwd, "s", 0)
	require.NoError(t, err)
	assert.Equal(t, uint32(0o755), st.Mode&0o7777)
}

// TestUtimensOmitKeepsEntryChangeTime: a directory's view mtime is the time
// its entries last changed; setting only its access time keeps it.
func TestUtimensOmitKeepsEntryChangeTime(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
		old := unix.NsecToTimespec(1e9)
		require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(dir, "d"), []unix.Timespec{old, old}, 0))
	})
	e.create("d/new", "", 0o644)
	before, err := e.v.Stat(e.c, e.c.Cwd, "d", 0)
	require.NoError(t, err)
	require.Greater(t, before.Mtim.Sec, int64(1))
	ts := [2]unix.Timespec{{Sec: 5}, {Nsec: unix.UTIME_OMIT}}
	require.NoError(t, e.v.Utimens(e.c, e.c.Cwd, "d", &ts, 0))
	after, err := e.v.Stat(e.c, e.c.Cwd, "d", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(5), after.Atim.Sec)
	assert.Equal(t, before.Mtim, after.Mtim)
}

// TestCtimeOfInodeOnlyChanges: link, unlink of another name, rename,
// exchange and chown to (-1, -1) move the ctime of the object, as Linux's
// file systems do, though none writes its host original; its mtime stays.
func TestCtimeOfInodeOnlyChanges(t *testing.T) {
	e := newEnv(t, func(dir string) {
		for _, f := range []string{"linked", "renamed", "chowned", "x1", "x2"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644))
		}
		require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	})
	// A clock ahead of the host's, so that each change is seen to move it.
	tick := time.Now().Add(time.Hour)
	e.v.Now = func() time.Time { tick = tick.Add(time.Second); return tick }
	const keep = ^uint32(0)
	changes := map[string]func() error{
		"linked":  func() error { return e.v.Link(e.c, e.c.Cwd, "linked", e.c.Cwd, "linked2", 0) },
		"renamed": func() error { return e.v.Rename(e.c, e.c.Cwd, "renamed", e.c.Cwd, "d/renamed", 0) },
		"chowned": func() error { return e.v.Chown(e.c, e.c.Cwd, "chowned", keep, keep, 0) },
		"x1":      func() error { return e.v.Rename(e.c, e.c.Cwd, "x1", e.c.Cwd, "x2", unix.RENAME_EXCHANGE) },
	}
	for name, change := range changes {
		before, err := e.v.Stat(e.c, e.c.Cwd, name, 0)
		require.NoError(t, err, name)
		start := tick.Unix()
		require.NoError(t, change(), name)
		// Where the object is now.
		at := map[string]string{"renamed": "d/renamed", "x1": "x2"}[name]
		if at == "" {
			at = name
		}
		after, err := e.v.Stat(e.c, e.c.Cwd, at, 0)
		require.NoError(t, err, name)
		assert.Greater(t, after.Ctim.Sec, start, name)
		assert.Equal(t, before.Mtim, after.Mtim, name)
		stx, err := e.v.Statx(e.c, e.c.Cwd, at, 0, unix.STATX_BASIC_STATS)
		require.NoError(t, err, name)
		assert.Equal(t, after.Ctim.Sec, stx.Ctime.Sec, name)
	}
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "linked2", 0))
	st, err := e.v.Stat(e.c, e.c.Cwd, "linked", 0)
	require.NoError(t, err)
	assert.Equal(t, tick.Unix(), st.Ctim.Sec, "unlink of the other name")
}

func TestRemovedDirHasNoLinks(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "p", "host"), 0o755))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "p", "over"), 0o755))
	})
	require.NoError(t, e.v.Mkdir(e.c, e.c.Cwd, "p/new", 0o755))
	handles := map[string]*Handle{}
	for _, p := range []string{"p/host", "p/new", "p/over"} {
		h, err := e.v.Chdir(e.c, e.c.Cwd, p, 0)
		require.NoError(t, err, p)
		handles[p] = h
	}
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "p/host", unix.AT_REMOVEDIR))
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "p/new", unix.AT_REMOVEDIR))
	require.NoError(t, e.v.Mkdir(e.c, e.c.Cwd, "p/src", 0o755))
	require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "p/src", e.c.Cwd, "p/over", 0))
	for p, h := range handles {
		st, err := e.v.Stat(e.c, h, "", unix.AT_EMPTY_PATH)
		require.NoError(t, err, p)
		assert.Equal(t, uint64(0), st.Nlink, p)
	}
	st, err := e.v.Stat(e.c, e.c.Cwd, "p", 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), st.Nlink, "p holds only over")
}

// TestRenameAndLinkSetCtime: rename sets the ctime of the object it moves,
// link and unlink that of the object whose link count they change, as
// Linux's file systems do, also for host objects the view does not copy.
func TestRenameAndLinkSetCtime(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "g"), []byte("x"), 0o644))
		require.NoError(t, os.Link(filepath.Join(dir, "g"), filepath.Join(dir, "g2")))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "h"), []byte("x"), 0o644))
	})
	later := time.Now().Add(time.Hour)
	e.v.Now = func() time.Time { return later }
	ctime := func(p string) int64 {
		st, err := e.v.Stat(e.c, e.c.Cwd, p, unix.AT_SYMLINK_NOFOLLOW)
		require.NoError(t, err, p)
		stx, err := e.v.Statx(e.c, e.c.Cwd, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME)
		require.NoError(t, err, p)
		assert.Equal(t, st.Ctim.Sec, stx.Ctime.Sec, "stat and statx agree on %s", p)
		return st.Ctim.Sec
	}
	for _, p := range []string{"d", "f", "g", "h"} {
		require.Less(t, ctime(p), later.Unix(), p)
	}
	require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "d", e.c.Cwd, "d2", 0))
	require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "f", e.c.Cwd, "f2", 0))
	require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "g2", 0))
	require.NoError(t, e.v.Link(e.c, e.c.Cwd, "h", e.c.Cwd, "h2", 0))
	for _, p := range []string{"d2", "f2", "g", "h", "h2"} {
		assert.Equal(t, later.Unix(), ctime(p), p)
	}
}

// TestOpenNoatimeNeedsOwner: O_NOATIME is refused (EPERM) to a caller who
// neither owns the object nor has CAP_FOWNER, after the permission check,
// for files, directories and FIFOs alike; the owner may use it.
func TestOpenNoatimeNeedsOwner(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("x"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "mine"), []byte("x"), 0o600))
		require.NoError(t, os.Chown(filepath.Join(dir, "mine"), 4242, 4242))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
		require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o666))
	})
	user := e.as(4242, 4242)
	for _, tt := range []struct {
		c     *Caller
		path  string
		flags uint64
		want  error
	}{
		{user, "f", unix.O_RDONLY, nil},
		{user, "f", unix.O_RDONLY | unix.O_NOATIME, unix.EPERM},
		{user, "secret", unix.O_RDONLY | unix.O_NOATIME, unix.EACCES},
		{user, "d", unix.O_RDONLY | unix.O_NOATIME, unix.EPERM},
		{user, "fifo", unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOATIME, unix.EPERM},
		{user, "mine", unix.O_RDWR | unix.O_NOATIME, nil},
		{user, "f", unix.O_PATH | unix.O_NOATIME, nil},
		{e.c, "f", unix.O_RDONLY | unix.O_NOATIME, nil},
	} {
		fd, err := e.v.Open(tt.c, e.c.Cwd, tt.path, OpenHow{Flags: tt.flags})
		if tt.want != nil {
			assert.ErrorIs(t, err, tt.want, "%s %#x", tt.path, tt.flags)
			continue
		}
		require.NoError(t, err, "%s %#x", tt.path, tt.flags)
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// TestDirectoryAttrsFollowChanges: the view keeps a staged directory's
// permission attributes between calls; every change to them by a call of
// the transaction shows in the next permission check.
func TestDirectoryAttrsFollowChanges(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "d/f"), []byte("x"), 0o644))
		require.NoError(t, os.Chown(filepath.Join(dir, "d"), 4242, 4242))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "w"), 0o755))
		require.NoError(t, os.Chown(filepath.Join(dir, "w"), 4242, 4242))
	})
	user := e.as(4242, 4242)
	canOpen := func(path string) error {
		fd, err := e.v.Open(user, e.c.Cwd, path, OpenHow{Flags: unix.O_RDONLY})
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	require.NoError(t, canOpen("d/f"), "before any change")

	// A host directory, staged by its first attribute change.
	e.must(e.v.Chmod(user, e.c.Cwd, "d", 0o600, 0), "chmod d 600")
	assert.ErrorIs(t, canOpen("d/f"), unix.EACCES, "search permission gone")
	e.must(e.v.Chmod(user, e.c.Cwd, "d", 0o700, 0), "chmod d 700")
	assert.NoError(t, canOpen("d/f"), "search permission back")
	e.must(e.v.Chown(e.c, e.c.Cwd, "d", 5000, 5000, 0), "chown d")
	assert.ErrorIs(t, canOpen("d/f"), unix.EACCES, "no longer the owner")
	e.must(e.v.Chmod(e.c, e.c.Cwd, "d", 0o755, 0), "chmod d 755")
	assert.NoError(t, canOpen("d/f"), "others may search")

	// A directory the transaction made.
	e.must(e.v.Mkdir(user, e.c.Cwd, "w/n", 0o755), "mkdir w/n")
	fd, err := e.v.Open(user, e.c.Cwd, "w/n/g", OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o644})
	require.NoError(t, err)
	unix.Close(fd)
	require.NoError(t, canOpen("w/n/g"))
	e.must(e.v.Chmod(user, e.c.Cwd, "w/n", 0o600, 0), "chmod w/n 600")
	assert.ErrorIs(t, canOpen("w/n/g"), unix.EACCES, "search permission gone")
	e.must(e.v.Chmod(user, e.c.Cwd, "w/n", 0o700, 0), "chmod w/n 700")
	assert.NoError(t, canOpen("w/n/g"), "search permission back")
}

// TestCreateOwnerAndMode: what a create, mkdir or mknod makes has the owner
// and mode Linux gives it, whether or not they match what the supervisor
// made it with, and an open that creates a file gives the access asked for,
// whatever the new mode.
func TestCreateOwnerAndMode(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "pub"), 0o777))
		require.NoError(t, unix.Chmod(filepath.Join(dir, "pub"), 0o777))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "sgid"), 0o777))
		require.NoError(t, os.Chown(filepath.Join(dir, "sgid"), 0, 4343))
		require.NoError(t, unix.Chmod(filepath.Join(dir, "sgid"), 0o2777))
	})
	root := e.c
	user := e.as(4242, 4242)
	tests := []struct {
		name     string
		c        *Caller
		path     string
		mode     uint32
		umask    uint32
		uid, gid uint32
		want     uint32 // with S_IFMT
		mk       string // "open", "mkdir", "fifo"
	}{
		{"root, plain mode", root, "pub/a", 0o644, 0o022, 0, 0, unix.S_IFREG | 0o644, "open"},
		{"root, umask applied", root, "pub/b", 0o666, 0o027, 0, 0, unix.S_IFREG | 0o640, "open"},
		{"root, set-user-ID", root, "pub/c", 0o4755, 0, 0, 0, unix.S_IFREG | 0o4755, "open"},
		{"root, no permissions at all", root, "pub/d", 0, 0, 0, 0, unix.S_IFREG, "open"},
		{"user, plain mode", user, "pub/e", 0o600, 0o022, 4242, 4242, unix.S_IFREG | 0o600, "open"},
		{"user, set-user-ID kept by chown order", user, "pub/f", 0o4711, 0, 4242, 4242, unix.S_IFREG | 0o4711, "open"},
		{"user in set-group-ID directory", user, "sgid/g", 0o640, 0o022, 4242, 4343, unix.S_IFREG | 0o640, "open"},
		{"root in set-group-ID directory", root, "sgid/l", 0o644, 0o022, 0, 4343, unix.S_IFREG | 0o644, "open"},
		{"root directory, sticky", root, "pub/h", 0o1777, 0, 0, 0, unix.S_IFDIR | 0o1777, "mkdir"},
		{"user directory in set-group-ID directory", user, "sgid/i", 0o755, 0o022, 4242, 4343, unix.S_IFDIR | 0o2755, "mkdir"},
		{"root FIFO", root, "pub/j", 0o620, 0o002, 0, 0, unix.S_IFIFO | 0o620, "fifo"},
		{"user FIFO", user, "pub/k", 0o666, 0o022, 4242, 4242, unix.S_IFIFO | 0o644, "fifo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *tt.c
			c.Umask = tt.umask
			switch tt.mk {
			case "open":
				// Read and write access on a file whose mode allows
				// neither, or only one, to its owner.
				fd, err := e.v.Open(&c, e.c.Cwd, tt.path, OpenHow{Flags: unix.O_CREAT | unix.O_EXCL | unix.O_RDWR, Mode: tt.mode})
				require.NoError(t, err)
				_, err = unix.Write(fd, []byte("xy"))
				assert.NoError(t, err, "write through the creating descriptor")
				_, err = unix.Pread(fd, make([]byte, 2), 0)
				assert.NoError(t, err, "read through the creating descriptor")
				unix.Close(fd)
			case "mkdir":
				require.NoError(t, e.v.Mkdir(&c, e.c.Cwd, tt.path, tt.mode))
			case "fifo":
				require.NoError(t, e.v.Mknod(&c, e.c.Cwd, tt.path, unix.S_IFIFO|tt.mode, 0))
			}
			st, err := e.v.Stat(e.c, e.c.Cwd, tt.path, unix.AT_SYMLINK_NOFOLLOW)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("%o %d:%d", tt.want, tt.uid, tt.gid), fmt.Sprintf("%o %d:%d", st.Mode, st.Uid, st.Gid))
		})
	}
}

// TestStatxAsStat: statx shows the view's link count, size and times
// whatever mask the caller gives, as stat does: of a directory whose
// entries changed, a file that gained a link, a host FIFO whose mode
// changed.
func TestStatxAsStat(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "d/f"), []byte("x"), 0o644))
		require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	})
	for i := range 300 {
		e.create(fmt.Sprintf("d/new-entry-with-a-long-name-%d", i), "", 0o644)
	}
	e.must(e.v.Link(e.c, e.c.Cwd, "d/f", e.c.Cwd, "d/g", 0), "link")
	e.must(e.v.Chmod(e.c, e.c.Cwd, "fifo", 0o600, 0), "chmod fifo")
	for _, p := range []string{"d", "d/f", "fifo"} {
		st, err := e.v.Stat(e.c, e.c.Cwd, p, unix.AT_SYMLINK_NOFOLLOW)
		require.NoError(t, err)
		for _, mask := range []uint32{0, unix.STATX_BTIME, unix.STATX_BASIC_STATS} {
			stx, err := e.v.Statx(e.c, e.c.Cwd, p, unix.AT_SYMLINK_NOFOLLOW, mask)
			require.NoError(t, err)
			assert.Equal(t,
				fmt.Sprintf("ino %d mode %o nlink %d size %d blocks %d mtime %d.%d ctime %d.%d", st.Ino, st.Mode, st.Nlink, st.Size, st.Blocks, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec),
				fmt.Sprintf("ino %d mode %o nlink %d size %d blocks %d mtime %d.%d ctime %d.%d", stx.Ino, stx.Mode, stx.Nlink, stx.Size, stx.Blocks, stx.Mtime.Sec, stx.Mtime.Nsec, stx.Ctime.Sec, stx.Ctime.Nsec),
				"%s, mask %#x", p, mask)
		}
	}
}
