package vfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/store"
)

// readOf returns the read record of path (relative to e.dir), or a zero one.
func readOf(e *env, path string) store.ReadRecord {
	for _, r := range e.v.ReadSet() {
		if r.Path == filepath.Join(e.dir, path) {
			return r
		}
	}
	return store.ReadRecord{}
}

// fdStat stats the descriptor the view opened path with flags, as glibc's
// fstat does: fstatat(fd, "", AT_EMPTY_PATH).
func fdStat(e *env, path string, flags int) {
	e.t.Helper()
	fd, err := e.v.Open(e.c, e.c.Cwd, path, OpenHow{Flags: uint64(flags)})
	e.must(err, "open "+path)
	h, err := e.v.HandleOf(e.c, fd)
	e.must(err, "handle")
	defer h.Release()
	_, err = e.v.Stat(e.c, h, "", unix.AT_EMPTY_PATH)
	e.must(err, "fstat")
}

// TestReadGranules: which granules of a host file each kind of read
// records: its contents (data), its attributes (meta), or only its name.
func TestReadGranules(t *testing.T) {
	tests := []struct {
		name       string
		read       func(e *env)
		data, meta bool
	}{
		{"lookup", func(e *env) { e.must(e.v.Access(e.c, e.c.Cwd, "f", unix.F_OK, 0), "access") }, false, false},
		{"read", func(e *env) { e.read("f") }, true, false},
		{"fstat of a descriptor open for reading", func(e *env) { fdStat(e, "f", unix.O_RDONLY) }, true, false},
		// The view hands out a read-only descriptor for O_PATH.
		{"open O_PATH", func(e *env) { e.v.Open(e.c, e.c.Cwd, "f", OpenHow{Flags: unix.O_PATH}) }, false, true},
		{"fstat of an O_PATH descriptor", func(e *env) { fdStat(e, "f", unix.O_PATH) }, true, true},
		{"stat", func(e *env) { e.v.Stat(e.c, e.c.Cwd, "f", 0) }, false, true},
		{"statx", func(e *env) { e.v.Statx(e.c, e.c.Cwd, "f", 0, unix.STATX_BASIC_STATS) }, false, true},
		{"access", func(e *env) { e.must(e.v.Access(e.c, e.c.Cwd, "f", unix.R_OK, 0), "access") }, false, true},
		{"getxattr", func(e *env) { e.v.Getxattr(e.c, e.c.Cwd, "f", XattrOp{}, "user.x", 0) }, false, true},
		{"listxattr", func(e *env) { e.v.Listxattr(e.c, e.c.Cwd, "f", XattrOp{}, 0) }, false, true},
		{"exec", func(e *env) {
			_, err := e.v.Executable(e.c, e.c.Cwd, "f", 0)
			e.must(err, "exec")
		}, true, true},
		{"copy-up for writing", func(e *env) { e.appendTo("f", "x") }, true, true},
		{"copy-up for a chmod", func(e *env) { e.must(e.v.Chmod(e.c, e.c.Cwd, "f", 0o600, 0), "chmod") }, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, hostTree)
			require.NoError(t, os.Chmod(filepath.Join(e.dir, "f"), 0o755))
			tt.read(e)
			r := readOf(e, "f")
			require.True(t, r.Exists, "f is in the read set")
			assert.Equal(t, tt.data, r.Data, "data")
			assert.Equal(t, tt.meta, r.Meta, "meta")
			if tt.data || tt.meta {
				assert.Equal(t, uint32(unix.S_IFREG|0o755), r.Mode, "the attributes of the first read")
				assert.Equal(t, int64(len("host file\n")), r.Size)
			}
		})
	}
}

// TestWriteSetGranules: the write set tells a change of a name from a
// change of the data or the attributes of the object it names, also when
// the write-through replaces the object by its staged copy.
func TestWriteSetGranules(t *testing.T) {
	g := func(kind, path string) store.Granule { return store.Granule{Kind: kind, Path: path} }
	tests := []struct {
		name  string
		write func(e *env)
		want  []store.Granule
	}{
		{"chmod", func(e *env) { e.must(e.v.Chmod(e.c, e.c.Cwd, "f", 0o600, 0), "chmod") },
			[]store.Granule{g(GranuleMeta, "f")}},
		{"chown", func(e *env) { e.must(e.v.Chown(e.c, e.c.Cwd, "f", 1, 1, 0), "chown") },
			[]store.Granule{g(GranuleMeta, "f")}},
		{"setxattr", func(e *env) {
			e.must(e.v.Setxattr(e.c, e.c.Cwd, "f", XattrOp{}, "user.x", []byte("1"), 0), "setxattr")
		}, []store.Granule{g(GranuleMeta, "f")}},
		{"append", func(e *env) { e.appendTo("f", "x") },
			[]store.Granule{g(GranuleData, "f"), g(GranuleMeta, "f")}},
		{"truncate", func(e *env) { e.must(e.v.Truncate(e.c, e.c.Cwd, "f", 1), "truncate") },
			[]store.Granule{g(GranuleData, "f"), g(GranuleMeta, "f")}},
		{"chmod, then open for writing", func(e *env) {
			e.must(e.v.Chmod(e.c, e.c.Cwd, "f", 0o600, 0), "chmod")
			e.appendTo("f", "")
		}, []store.Granule{g(GranuleMeta, "f")}}, // nothing written: its bytes are the host's
		{"chmod, then write", func(e *env) {
			e.must(e.v.Chmod(e.c, e.c.Cwd, "f", 0o600, 0), "chmod")
			e.appendTo("f", "x")
		}, []store.Granule{g(GranuleData, "f"), g(GranuleMeta, "f")}},
		{"chmod of a hard-linked file", func(e *env) { e.must(e.v.Chmod(e.c, e.c.Cwd, "linked", 0o600, 0), "chmod") },
			[]store.Granule{g(GranuleMeta, "linked")}},
		{"append to a hard-linked file", func(e *env) { e.appendTo("linked", "x") },
			[]store.Granule{g(GranuleData, "linked"), g(GranuleMeta, "linked")}},
		{"chmod of a directory", func(e *env) { e.must(e.v.Chmod(e.c, e.c.Cwd, "d", 0o700, 0), "chmod") },
			[]store.Granule{g(GranuleMeta, "d")}},
		{"create", func(e *env) { e.create("d/new", "n", 0o644) },
			[]store.Granule{g(GranuleEntry, "d/new")}},
		{"create over", func(e *env) { e.create("f", "n", 0o644) },
			[]store.Granule{g(GranuleData, "f"), g(GranuleMeta, "f")}},
		{"unlink", func(e *env) { e.must(e.v.Unlink(e.c, e.c.Cwd, "f", 0), "unlink") },
			[]store.Granule{g(GranuleEntry, "f")}},
		{"rename", func(e *env) { e.must(e.v.Rename(e.c, e.c.Cwd, "f", e.c.Cwd, "d/f2", 0), "rename") },
			[]store.Granule{g(GranuleEntry, "d/f2"), g(GranuleEntry, "f")}},
		{"chmod, then rename", func(e *env) {
			e.must(e.v.Chmod(e.c, e.c.Cwd, "f", 0o600, 0), "chmod")
			e.must(e.v.Rename(e.c, e.c.Cwd, "f", e.c.Cwd, "d/f2", 0), "rename")
		}, []store.Granule{g(GranuleEntry, "d/f2"), g(GranuleEntry, "f"), g(GranuleMeta, "f")}},
		{"link", func(e *env) { e.must(e.v.Link(e.c, e.c.Cwd, "f", e.c.Cwd, "d/f2", 0), "link") },
			[]store.Granule{g(GranuleEntry, "d/f2"), g(GranuleMeta, "f")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, hostTree)
			tt.write(e)
			want := make([]store.Granule, len(tt.want))
			for i, w := range tt.want {
				want[i] = store.Granule{Kind: w.Kind, Path: filepath.Join(e.dir, w.Path)}
			}
			var got []store.Granule
			for _, g := range e.v.WriteSet() {
				got = append(got, store.Granule{Kind: g.Kind, Path: g.Path})
			}
			assert.ElementsMatch(t, want, got)
		})
	}
}

// TestWriteSetEndState: a data or meta granule says what the object will
// be once written through: the staged copy that replaces a file whose
// contents changed, with its times; a file whose attributes alone changed,
// or a directory, changed in place, with the mtime the transaction set.
func TestWriteSetEndState(t *testing.T) {
	e := newEnv(t, hostTree)
	f, g, d := filepath.Join(e.dir, "f"), filepath.Join(e.dir, "g"), filepath.Join(e.dir, "d")
	var host, hostG, dirSt unix.Stat_t
	require.NoError(t, unix.Lstat(f, &host))
	require.NoError(t, unix.Lstat(g, &hostG))
	require.NoError(t, unix.Lstat(d, &dirSt))
	e.must(e.v.Chmod(e.c, e.c.Cwd, "f", 0o600, 0), "chmod")
	e.must(e.v.Utimens(e.c, e.c.Cwd, "d", &[2]unix.Timespec{{Sec: 5}, {Sec: 7}}, 0), "utimes")
	fd, err := e.v.Open(e.c, e.c.Cwd, "g", OpenHow{Flags: unix.O_WRONLY | unix.O_APPEND})
	e.must(err, "open")
	_, err = unix.Write(fd, []byte("more"))
	unix.Close(fd)
	e.must(err, "write")
	e.must(e.v.Utimens(e.c, e.c.Cwd, "g", &[2]unix.Timespec{{Sec: 5}, {Sec: 9}}, 0), "utimes")
	var staged uint64
	for _, op := range e.v.Journal() {
		if op.Kind == store.OpRename && op.Path == g {
			staged = op.Ino
		}
	}
	require.NotZero(t, staged)
	require.NotEqual(t, hostG.Ino, staged)
	assert.Equal(t, []store.Granule{
		{Kind: GranuleMeta, Path: d, Ino: dirSt.Ino, Mtime: store.Timespec{Sec: 7}},
		{Kind: GranuleMeta, Path: f, Ino: host.Ino}, // its mtime stays the host's
		{Kind: GranuleData, Path: g, Ino: staged, Mtime: store.Timespec{Sec: 9}},
		{Kind: GranuleMeta, Path: g, Ino: staged, Mtime: store.Timespec{Sec: 9}},
	}, e.v.WriteSet())
}

// TestValidateGranules: against the host, a read of a file's data does
// not conflict with a change of its mode or owner alone, a read of its
// attributes does; a change whose kind the kernel does not tell conflicts
// with both. For a path another transaction changed (rewritten), the
// object may also be what that transaction's write-through left: a new
// inode, with the times of its copy.
func TestValidateGranules(t *testing.T) {
	chmod := func(dir string) error { return os.Chmod(filepath.Join(dir, "f"), 0o600) }
	write := func(dir string) error { return appendHost(filepath.Join(dir, "f"), "x") }
	// copyChmod is the write-through of another transaction's chmod: a
	// copy, with the original's times, replaces the file.
	copyChmod := func(dir string) error {
		p := filepath.Join(dir, "f")
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if err := os.WriteFile(p+".copy", []byte("host file\n"), 0o600); err != nil {
			return err
		}
		if err := unix.UtimesNano(p+".copy", []unix.Timespec{st.Atim, st.Mtim}); err != nil {
			return err
		}
		return os.Rename(p+".copy", p)
	}
	tests := []struct {
		name string
		read func(e *env)
		// tx is another transaction's write-through, which validation
		// knows of by the meta granule it left; outside an unsupervised
		// change (either may be nil).
		tx, outside func(dir string) error
		reason      string // "" for no conflict
	}{
		{"data read, chmod", func(e *env) { e.read("f") }, nil, chmod, ""},
		{"data read, chown", func(e *env) { e.read("f") }, nil,
			func(dir string) error { return os.Chown(filepath.Join(dir, "f"), 1, 2) }, ""},
		{"data read through fstat, chmod", func(e *env) { fdStat(e, "f", unix.O_RDONLY) }, nil, chmod, ""},
		{"data read, written", func(e *env) { e.read("f") }, nil, write,
			"modified by another process after it was read"},
		{"data read, written with its times restored", func(e *env) { e.read("f") }, nil,
			func(dir string) error {
				p := filepath.Join(dir, "f")
				var st unix.Stat_t
				if err := unix.Lstat(p, &st); err != nil {
					return err
				}
				if err := os.WriteFile(p, []byte("HOST FILE\n"), 0); err != nil {
					return err
				}
				return unix.UtimesNano(p, []unix.Timespec{st.Atim, st.Mtim})
			},
			"changed by another process after it was read, perhaps its data: its ctime moved, its mode and owner did not"},
		{"data read, xattr set", func(e *env) { e.read("f") }, nil,
			func(dir string) error { return unix.Setxattr(filepath.Join(dir, "f"), "user.x", []byte("1"), 0) },
			"changed by another process after it was read, perhaps its data: its ctime moved, its mode and owner did not"},
		{"attributes read, chmod", func(e *env) { e.v.Stat(e.c, e.c.Cwd, "f", 0) }, nil, chmod,
			"its mode or owner was changed by another process after it was read"},
		{"attributes read, written", func(e *env) { e.v.Stat(e.c, e.c.Cwd, "f", 0) }, nil, write,
			"modified by another process after it was read"},
		{"data read, another transaction's chmod", func(e *env) { e.read("f") }, copyChmod, nil, ""},
		{"data read, the same chmod, not by a transaction", func(e *env) { e.read("f") }, nil, copyChmod,
			"replaced by another process after it was read"},
		{"data read, another transaction's chmod, then replaced", func(e *env) { e.read("f") }, copyChmod,
			func(dir string) error { return replaceHost(filepath.Join(dir, "f"), "host file\n", 0o600) },
			"replaced by another process after it was read"},
		{"data read, another transaction's chmod, then written", func(e *env) { e.read("f") }, copyChmod,
			func(dir string) error { return os.WriteFile(filepath.Join(dir, "f"), []byte("HOST FILE\n"), 0) },
			"modified by another process after it was read"},
		{"looked up, another transaction's chmod", func(e *env) { e.v.Access(e.c, e.c.Cwd, "f", unix.F_OK, 0) },
			copyChmod, nil, ""},
		{"looked up, another transaction's chmod, then a directory", func(e *env) { e.v.Access(e.c, e.c.Cwd, "f", unix.F_OK, 0) },
			copyChmod, func(dir string) error {
				if err := os.Remove(filepath.Join(dir, "f")); err != nil {
					return err
				}
				return os.Mkdir(filepath.Join(dir, "f"), 0o755)
			}, "replaced by another process after it was read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, hostTree)
			f := filepath.Join(e.dir, "f")
			// A name of the original keeps its inode number from being
			// reused by the file system for a replacement.
			require.NoError(t, os.Link(f, filepath.Join(e.dir, "keep")))
			// Times in the past, so that a change now moves them.
			require.NoError(t, os.Chtimes(f, time.Unix(1e9, 0), time.Unix(1e9, 0)))
			tt.read(e)
			require.NoError(t, e.v.Validate(nil), "before the host changed")
			var rewritten map[string][]store.Granule
			if tt.tx != nil {
				require.NoError(t, tt.tx(e.dir))
				var st unix.Stat_t
				require.NoError(t, unix.Lstat(f, &st))
				rewritten = map[string][]store.Granule{f: {{Kind: GranuleMeta, Path: f, Ino: st.Ino,
					Mtime: store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec}}}}
			}
			if tt.outside != nil {
				require.NoError(t, tt.outside(e.dir))
			}
			err := e.v.Validate(rewritten)
			if tt.reason == "" {
				assert.NoError(t, err)
			} else {
				assert.Equal(t, &ConflictError{f, tt.reason}, err)
			}
			assert.Equal(t, err, ValidateReadSet(e.v.ReadSet(), rewritten), "a kept transaction validates alike")
		})
	}
}

// replaceHost replaces p by a new file with content and mode, as an
// editor saves it.
func replaceHost(p, content string, mode os.FileMode) error {
	if err := os.WriteFile(p+".new", []byte(content), mode); err != nil {
		return err
	}
	return os.Rename(p+".new", p)
}
