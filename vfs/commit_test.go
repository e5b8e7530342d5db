package vfs_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/internal/testenv"
	"txexec/store"
	"txexec/txn"
	"txexec/vfs"
)

// view is a transaction over a host tree, seen by a root caller whose cwd
// is the tree.
type view struct {
	t       *testing.T
	dir     string
	staging string
	v       *vfs.Tx
	c       *vfs.Caller
	// areas are the staging areas the view made on other mounts.
	areas []string
}

// treeMount is where a test tree lives: on the staging directory's own
// mount, or at the root of another mount.
type treeMount string

const (
	sameMount treeMount = "same mount"
	tmpfsRoot treeMount = "tmpfs"      // a tmpfs mounted on the tree
	bindRoot  treeMount = "bind mount" // a directory of the same file system bound on the tree
)

var treeMounts = []treeMount{sameMount, tmpfsRoot, bindRoot}

// mountTree makes dir, a new empty directory, the root of a mount of kind
// m; the mount goes with the test. It skips the test where mounting is not
// allowed.
func mountTree(t *testing.T, dir string, m treeMount) {
	t.Helper()
	var err error
	switch m {
	case sameMount:
		return
	case tmpfsRoot:
		err = unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755")
	case bindRoot:
		src := t.TempDir()
		err = unix.Mount(src, dir, "", unix.MS_BIND, "")
	}
	if err == unix.EPERM {
		t.Skipf("mounting a %s needs CAP_SYS_ADMIN: %v", m, err)
	}
	require.NoError(t, err, "mount %s on %s", m, dir)
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(dir, unix.MNT_DETACH), "unmount %s", dir) })
}

// newViewOn makes a view over a test tree at the root of a mount of kind
// m. Staging areas on other mounts are made as the store makes them
// (store.AddStagingArea), and recorded in w.areas.
func newViewOn(t *testing.T, m treeMount) *view {
	t.Helper()
	dir := t.TempDir()
	mountTree(t, dir, m)
	for _, d := range []string{"d", "d/sub", "e", "gone"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	for p, s := range map[string]string{"f": "host file\n", "g": "g\n", "d/x": "in d\n", "d/sub/y": "deep\n",
		"gone/old": "old\n", "linked": "two names\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644))
	}
	require.NoError(t, os.Link(filepath.Join(dir, "linked"), filepath.Join(dir, "d/linked2")))
	require.NoError(t, os.Symlink("f", filepath.Join(dir, "sl")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	host, err := vfs.NewHost()
	require.NoError(t, err)
	w := &view{t: t, dir: dir, staging: t.TempDir()}
	w.v, err = vfs.NewTx(host, w.staging, vfs.TxOptions{NewArea: func(mountPoint string) (string, error) {
		p := filepath.Join(mountPoint, fmt.Sprintf("%stest-%d", store.AreaPrefix, len(w.areas)))
		if err := os.Mkdir(p, 0o700); err != nil {
			return "", err
		}
		w.areas = append(w.areas, p)
		return p, nil
	}})
	require.NoError(t, err)
	t.Cleanup(w.v.Close)
	w.c = callerIn(t, w.v, dir)
	return w
}

// removeStaging drops the staging directory and areas, as the committer
// does after the write-through (extra names of staged objects live
// there).
func (w *view) removeStaging() {
	w.t.Helper()
	for _, p := range append([]string{w.staging}, w.areas...) {
		require.NoError(w.t, os.RemoveAll(p))
	}
}

func (w *view) ok(err error) {
	w.t.Helper()
	require.NoError(w.t, err)
}

func (w *view) write(path string, flags int, data string) {
	w.t.Helper()
	fd, err := w.v.Open(w.c, w.c.Cwd, path, vfs.OpenHow{Flags: uint64(flags | unix.O_WRONLY), Mode: 0o644})
	require.NoError(w.t, err, path)
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(data))
	require.NoError(w.t, err)
}

// manifest describes the view's tree (type, mode, owner, size, link
// count, content, link target, and mtime for non-directories).
func (w *view) manifest() string {
	w.t.Helper()
	var lines []string
	var walk func(rel string)
	walk = func(rel string) {
		st, err := w.v.Stat(w.c, w.c.Cwd, rel, unix.AT_SYMLINK_NOFOLLOW)
		require.NoError(w.t, err, rel)
		line := describe(rel, &st)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			fd, err := w.v.Open(w.c, w.c.Cwd, rel, vfs.OpenHow{Flags: unix.O_RDONLY})
			require.NoError(w.t, err, rel)
			line += " sha=" + hashFD(w.t, fd)
		case unix.S_IFLNK:
			target, err := w.v.Readlink(w.c, w.c.Cwd, rel)
			require.NoError(w.t, err, rel)
			line += " -> " + target
		case unix.S_IFDIR:
			for _, n := range listNames(w.t, w.v, w.c, rel) {
				walk(rel + "/" + n)
			}
		}
		lines = append(lines, line)
	}
	walk(".")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// hostManifest describes the host tree as manifest describes the view.
func hostManifest(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != "." {
			rel = "./" + rel
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		line := describe(rel, &st)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			line += " sha=" + hashFD(t, fd)
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		}
		lines = append(lines, line)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func describe(rel string, st *unix.Stat_t) string {
	s := fmt.Sprintf("%s %o %d:%d nlink=%d", rel, st.Mode, st.Uid, st.Gid, st.Nlink)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		s += fmt.Sprintf(" size=%d mtime=%d.%09d", st.Size, st.Mtim.Sec, st.Mtim.Nsec)
	}
	return s
}

func hashFD(t *testing.T, fd int) string {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	h := sha256.New()
	_, err := f.WriteTo(h)
	require.NoError(t, err)
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}

// TestCommitMatchesView: applying the journal to the host gives the tree
// the transaction saw — for sequences that stress the replay (hard-link
// groups, renames of changed objects, whiteouts, exchange, O_TMPFILE).
func TestCommitMatchesView(t *testing.T) {
	tests := []struct {
		name string
		do   func(w *view)
	}{
		{"write a host file", func(w *view) { w.write("f", unix.O_APPEND, "more\n") }},
		{"write a hard-linked host file", func(w *view) { w.write("d/linked2", unix.O_APPEND, "more\n") }},
		{"link a host file, then write it", func(w *view) {
			w.ok(w.v.Link(w.c, w.c.Cwd, "f", w.c.Cwd, "e/f2", 0))
			w.write("e/f2", unix.O_TRUNC, "changed through the new name\n")
		}},
		{"link, write, remove the original name, remove the dir", func(w *view) {
			w.ok(w.v.Link(w.c, w.c.Cwd, "d/x", w.c.Cwd, "x-link", 0))
			w.write("x-link", unix.O_TRUNC, "x\n")
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/x", 0))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/linked2", 0))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/sub/y", 0))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/sub", unix.AT_REMOVEDIR))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d", unix.AT_REMOVEDIR))
		}},
		{"rename a written file, then write it again", func(w *view) {
			w.write("f", unix.O_APPEND, "1\n")
			w.ok(w.v.Rename(w.c, w.c.Cwd, "f", w.c.Cwd, "d/f", 0))
			w.write("d/f", unix.O_APPEND, "2\n")
		}},
		{"rename a dir, then change inside it", func(w *view) {
			w.ok(w.v.Rename(w.c, w.c.Cwd, "d", w.c.Cwd, "e/d", 0))
			w.write("e/d/x", unix.O_APPEND, "!\n")
			w.write("e/d/new", unix.O_CREAT, "new\n")
			w.ok(w.v.Chmod(w.c, w.c.Cwd, "e/d", 0o700, 0))
		}},
		{"remove a tree and make it again", func(w *view) {
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "gone/old", 0))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "gone", unix.AT_REMOVEDIR))
			w.ok(w.v.Mkdir(w.c, w.c.Cwd, "gone", 0o750))
			w.write("gone/old", unix.O_CREAT, "new old\n")
		}},
		{"file replaced by dir and dir by file", func(w *view) {
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "g", 0))
			w.ok(w.v.Mkdir(w.c, w.c.Cwd, "g", 0o755))
			w.ok(w.v.Rename(w.c, w.c.Cwd, "e", w.c.Cwd, "g/e", 0))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "gone/old", 0))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "gone", unix.AT_REMOVEDIR))
			w.write("gone", unix.O_CREAT, "now a file\n")
		}},
		{"exchange a changed file and a dir", func(w *view) {
			w.write("f", unix.O_APPEND, "x\n")
			w.ok(w.v.Rename(w.c, w.c.Cwd, "f", w.c.Cwd, "d", unix.RENAME_EXCHANGE))
			w.write("f/new", unix.O_CREAT, "in the exchanged dir\n")
		}},
		{"whiteout", func(w *view) { w.ok(w.v.Rename(w.c, w.c.Cwd, "g", w.c.Cwd, "e/g", unix.RENAME_WHITEOUT)) }},
		{"chain of renames over each other", func(w *view) {
			w.ok(w.v.Rename(w.c, w.c.Cwd, "f", w.c.Cwd, "g", 0))
			w.ok(w.v.Rename(w.c, w.c.Cwd, "g", w.c.Cwd, "d/x", 0))
			w.write("f", unix.O_CREAT, "f again\n")
			w.ok(w.v.Rename(w.c, w.c.Cwd, "d/x", w.c.Cwd, "f", 0))
		}},
		{"times and modes", func(w *view) {
			w.ok(w.v.Utimens(w.c, w.c.Cwd, "f", &[2]unix.Timespec{{Sec: 5}, {Sec: 6}}, 0))
			w.ok(w.v.Chmod(w.c, w.c.Cwd, "linked", 0o600, 0))
			w.ok(w.v.Chown(w.c, w.c.Cwd, "sl", 7, 8, unix.AT_SYMLINK_NOFOLLOW))
			w.ok(w.v.Mkdir(w.c, w.c.Cwd, "nd", 0o755))
			w.write("nd/a", unix.O_CREAT, "a")
			w.ok(w.v.Utimens(w.c, w.c.Cwd, "nd", &[2]unix.Timespec{{Sec: 7}, {Sec: 8}}, 0))
		}},
		{"hard-linked file written and touched", func(w *view) {
			w.write("linked", unix.O_APPEND, "x")
			w.ok(w.v.Utimens(w.c, w.c.Cwd, "d/linked2", &[2]unix.Timespec{{Sec: 9}, {Sec: 10}}, 0))
			w.write("linked", unix.O_APPEND, "y")
		}},
		{"fifo used in the view", func(w *view) {
			fd, err := w.v.Open(w.c, w.c.Cwd, "fifo", vfs.OpenHow{Flags: unix.O_RDWR})
			w.ok(err)
			_, err = unix.Write(fd, []byte("x"))
			w.ok(err)
			unix.Close(fd)
		}},
		{"O_TMPFILE given a name", func(w *view) {
			fd, err := w.v.Open(w.c, w.c.Cwd, "e", vfs.OpenHow{Flags: unix.O_TMPFILE | unix.O_WRONLY, Mode: 0o640})
			w.ok(err)
			defer unix.Close(fd)
			_, err = unix.Write(fd, []byte("anonymous\n"))
			w.ok(err)
			dup, err := unix.Dup(fd)
			w.ok(err)
			h, err := w.v.HandleOf(w.c, dup)
			w.ok(err)
			defer h.Release()
			w.ok(w.v.Link(w.c, h, "", w.c.Cwd, "e/named", unix.AT_EMPTY_PATH))
			w.ok(w.v.Link(w.c, h, "", w.c.Cwd, "named2", unix.AT_EMPTY_PATH))
		}},
	}
	for _, m := range treeMounts {
		t.Run(string(m), func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					w := newViewOn(t, m)
					tt.do(w)
					seen := w.manifest()
					require.NoError(t, w.v.Validate(nil))
					ops := w.v.Journal()
					checkStagedOnMount(t, w, m, ops)
					require.NoError(t, txn.SyncStaged(ops, w.v.StagingAreas()))
					require.NoError(t, txn.Apply(ops, txn.ApplyOptions{
						Skipped: func(i int, op store.RedoOp, why string) {
							t.Errorf("op %d (%s %s) skipped: %s", i, op.Kind, op.Path, why)
						},
					}))
					w.removeStaging()
					assert.Equal(t, seen, hostManifest(t, w.dir))
				})
			}
		})
	}
}

// checkStagedOnMount checks that every staged object ops place or copy
// from is in the staging area on the tree's mount: the state directory's
// for the same mount, else the one area made at the tree's root.
func checkStagedOnMount(t *testing.T, w *view, m treeMount, ops []store.RedoOp) {
	t.Helper()
	want := w.staging
	if m != sameMount {
		require.LessOrEqual(t, len(w.areas), 1, "one area per mount")
		if len(w.areas) == 1 {
			want = w.areas[0]
			assert.Equal(t, w.dir, filepath.Dir(want), "the area is at the mount's root")
		}
	}
	for i, op := range ops {
		staged := strings.HasPrefix(op.Src, w.staging+"/")
		for _, a := range w.areas {
			staged = staged || strings.HasPrefix(op.Src, a+"/")
		}
		if staged {
			assert.Equal(t, want, filepath.Dir(op.Src), "op %d (%s %s)", i, op.Kind, op.Path)
		}
	}
}

// setFlags adds inode flags to the object fd is open on, skipping the test
// where the file system has none.
// TestCommitJournalDefersInodeFlags: the immutable and append-only flags a
// transaction sets on objects it made hold in the view (no removal, no new
// entries), and commit clears them on the staged objects before the
// commit point and sets them again after placing them (OpAddFlags, last).
func TestCommitJournalDefersInodeFlags(t *testing.T) {
	testenv.NeedRoot(t, "setting the immutable flag needs CAP_LINUX_IMMUTABLE")
	for _, m := range treeMounts {
		t.Run(string(m), func(t *testing.T) {
			w := newViewOn(t, m)
			t.Cleanup(func() {
				for _, p := range []string{"new", "newdir", "f"} {
					exec.Command("chattr", "-i", "-a", filepath.Join(w.dir, p)).Run()
				}
			})
			w.write("new", unix.O_CREAT, "made\n")
			w.write("f", unix.O_TRUNC, "changed\n")
			w.ok(w.v.Mkdir(w.c, w.c.Cwd, "newdir", 0o755))
			for p, f := range map[string]uint32{"new": store.FlagImmutable, "f": store.FlagAppend, "newdir": store.FlagImmutable} {
				fd, err := w.v.Open(w.c, w.c.Cwd, p, vfs.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK})
				w.ok(err)
				_, err = sysx.ChangeInodeFlags(fd, f, 0)
				unix.Close(fd)
				if sysx.NoInodeFlags(err) {
					testenv.SkipOrFail(t, "no inode flags on this file system")
				}
				require.NoError(t, err)
			}
			assert.ErrorIs(t, w.v.Unlink(w.c, w.c.Cwd, "new", 0), unix.EPERM)
			assert.ErrorIs(t, w.v.Unlink(w.c, w.c.Cwd, "f", 0), unix.EPERM)
			_, err := w.v.Open(w.c, w.c.Cwd, "newdir/x", vfs.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o644})
			assert.ErrorIs(t, err, unix.EPERM)
			seen := w.manifest()

			ops, err := w.v.CommitJournal()
			w.ok(err)
			var flagOps []string
			for i, op := range ops {
				if op.Kind == store.OpAddFlags {
					flagOps = append(flagOps, fmt.Sprintf("%s %#x", strings.TrimPrefix(op.Path, w.dir), op.Mode))
				} else {
					assert.Empty(t, flagOps, "op %d (%s) after the flags", i, op.Kind)
				}
			}
			assert.Equal(t, []string{"/f 0x20", "/new 0x10", "/newdir 0x10"}, flagOps)
			require.NoError(t, txn.Apply(ops, txn.ApplyOptions{
				Skipped: func(i int, op store.RedoOp, why string) {
					t.Errorf("op %d (%s %s) skipped: %s", i, op.Kind, op.Path, why)
				},
			}))
			w.removeStaging()
			assert.Equal(t, seen, hostManifest(t, w.dir))
			assert.NotZero(t, testenv.InodeFlags(t, filepath.Join(w.dir, "new"))&store.FlagImmutable)
			assert.NotZero(t, testenv.InodeFlags(t, filepath.Join(w.dir, "f"))&store.FlagAppend)
			assert.NotZero(t, testenv.InodeFlags(t, filepath.Join(w.dir, "newdir"))&store.FlagImmutable)
		})
	}
}

// TestUnchangedCopyIsNotWrittenThrough: a host file opened for writing and
// left as it was (a lock file) is not replaced at commit — the journal has
// no op for it and the host file keeps its inode; one whose bytes are the
// same but whose times or mode moved (an O_TRUNC of an empty file) gets
// them in place and keeps its inode too; any change of its bytes replaces
// it.
func TestUnchangedCopyIsNotWrittenThrough(t *testing.T) {
	tests := []struct {
		name string
		do   func(w *view)
		ops  []string // the journal's ops, "kind path"
		// replaced are the files that get a new inode.
		replaced []string
	}{
		{"opened for writing, nothing written", func(w *view) { w.write("f", unix.O_APPEND, "") }, nil, nil},
		{"opened read-write twice", func(w *view) {
			w.write("f", 0, "")
			w.write("f", unix.O_APPEND, "")
		}, nil, nil},
		{"hard-linked file opened for writing", func(w *view) { w.write("linked", unix.O_APPEND, "") }, nil, nil},
		{"written", func(w *view) { w.write("f", unix.O_APPEND, "more\n") }, []string{"rename /f"}, []string{"f"}},
		{"rewritten with other bytes of the same size", func(w *view) { w.write("f", 0, "HOST") }, []string{"rename /f"}, []string{"f"}},
		{"truncated and rewritten with the same bytes", func(w *view) {
			w.write("f", unix.O_TRUNC, "host file\n")
		}, []string{"setattr /f"}, nil},
		{"an empty file truncated", func(w *view) {
			w.write("empty", unix.O_TRUNC, "")
		}, []string{"setattr /empty"}, nil},
		{"opened for writing, then made executable", func(w *view) {
			w.write("f", unix.O_APPEND, "")
			w.ok(w.v.Chmod(w.c, w.c.Cwd, "f", 0o755, 0))
		}, []string{"setattr /f"}, nil},
		{"opened for writing, then chmod to its own mode", func(w *view) {
			w.write("f", unix.O_APPEND, "")
			w.ok(w.v.Chmod(w.c, w.c.Cwd, "f", 0o644, 0))
		}, nil, nil},
		{"opened for writing, then chattr +d", func(w *view) {
			w.write("f", unix.O_APPEND, "")
			fd, err := w.v.Open(w.c, w.c.Cwd, "f", vfs.OpenHow{Flags: unix.O_RDONLY})
			w.ok(err)
			flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
			w.ok(err)
			h, err := w.v.HandleOf(w.c, fd)
			w.ok(err)
			defer h.Release()
			const nodump = 0x40 // FS_NODUMP_FL, which only the staged copy carries
			w.ok(w.v.ChangeInodeAttrs(w.c, h, vfs.InodeAttrChange{Kind: vfs.AttrFlags, Value: flags | nodump}))
		}, []string{"rename /f"}, []string{"f"}},
		{"opened for writing, then renamed", func(w *view) {
			w.write("f", unix.O_APPEND, "")
			w.ok(w.v.Rename(w.c, w.c.Cwd, "f", w.c.Cwd, "f2", 0))
		}, []string{"rename /f", "rename /f2"}, []string{"f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newViewOn(t, sameMount)
			require.NoError(t, os.WriteFile(filepath.Join(w.dir, "empty"), nil, 0o644))
			// Times of the past, so that any change moves them.
			for _, p := range []string{"f", "linked", "empty"} {
				require.NoError(t, os.Chtimes(filepath.Join(w.dir, p), time.Unix(1e9, 0), time.Unix(1e9, 0)))
			}
			inodes := map[string]uint64{}
			for _, p := range []string{"f", "linked", "empty"} {
				var st unix.Stat_t
				require.NoError(t, unix.Stat(filepath.Join(w.dir, p), &st))
				inodes[p] = st.Ino
			}
			tt.do(w)
			seen := w.manifest()
			ops := w.v.Journal()
			var got []string
			for _, op := range ops {
				got = append(got, string(op.Kind)+" "+strings.TrimPrefix(op.Path, w.dir))
			}
			sort.Strings(got)
			assert.Equal(t, tt.ops, got, "the journal")
			require.NoError(t, txn.Apply(ops, txn.ApplyOptions{}))
			w.removeStaging()
			assert.Equal(t, seen, hostManifest(t, w.dir))
			for p, ino := range inodes {
				var st unix.Stat_t
				if unix.Stat(filepath.Join(w.dir, p), &st) != nil {
					continue // renamed away
				}
				if slices.Contains(tt.replaced, p) {
					assert.NotEqual(t, ino, st.Ino, "%s is replaced", p)
				} else {
					assert.Equal(t, ino, st.Ino, "%s keeps its inode", p)
				}
			}
		})
	}
}
