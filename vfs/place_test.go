package vfs_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/store"
	"txexec/txn"
	"txexec/vfs"
)

// handle opens path in the view and wraps the descriptor as the handle a
// process holding it would have.
func (w *view) handle(path string, flags int) *vfs.Handle {
	w.t.Helper()
	fd, err := w.v.Open(w.c, w.c.Cwd, path, vfs.OpenHow{Flags: uint64(flags)})
	require.NoError(w.t, err, path)
	h, err := w.v.HandleOf(w.c, fd)
	require.NoError(w.t, err, path)
	w.t.Cleanup(h.Release)
	return h
}

// hostStat stats rel in the host tree.
func (w *view) hostStat(rel string) unix.Stat_t {
	w.t.Helper()
	var st unix.Stat_t
	require.NoError(w.t, unix.Lstat(filepath.Join(w.dir, rel), &st), rel)
	return st
}

// commit validates and applies the journal, as the committer does, with
// no op skipped, and drops the staging areas.
func (w *view) commit() []store.RedoOp {
	w.t.Helper()
	require.NoError(w.t, w.v.Validate(nil))
	ops := w.v.Journal()
	require.NoError(w.t, txn.CheckOps(ops), "no op names an unrelated path")
	require.NoError(w.t, txn.SyncStaged(ops, w.v.StagingAreas()))
	require.NoError(w.t, txn.Apply(ops, txn.ApplyOptions{
		Skipped: func(i int, op store.RedoOp, why string) {
			w.t.Errorf("op %d (%s %s) skipped: %s", i, op.Kind, op.Path, why)
		},
	}))
	w.removeStaging()
	return ops
}

var (
	times56 = &[2]unix.Timespec{{Sec: 5}, {Sec: 6}}
	empty   = unix.AT_EMPTY_PATH
)

// TestChangesAfterNameRemoved: an object changed through a descriptor (or
// as a cwd) after a name of it was removed. A hard-linked file is changed
// through a name it still has at commit, known to the view or not; an
// object with no name left is changed in the view only, and nothing in the
// journal names it — in particular no "/" for a removed directory.
func TestChangesAfterNameRemoved(t *testing.T) {
	tests := []struct {
		name  string
		do    func(w *view)
		check func(w *view)
	}{
		{"hard link, other name never looked up", func(w *view) {
			h := w.handle("d/linked2", unix.O_RDONLY)
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/linked2", 0))
			w.ok(w.v.Chmod(w.c, h, "", 0o600, empty))
			w.ok(w.v.Utimens(w.c, h, "", times56, empty))
		}, func(w *view) {
			st := w.hostStat("linked")
			assert.Equal(w.t, uint32(0o600), st.Mode&0o7777)
			assert.Equal(w.t, int64(6), st.Mtim.Sec)
			assert.Equal(w.t, uint64(1), uint64(st.Nlink))
		}},
		{"hard link, other name looked up after the removal", func(w *view) {
			w.ok(w.v.Chmod(w.c, w.c.Cwd, "d/linked2", 0o4755, 0))
			h := w.handle("d/linked2", unix.O_RDONLY)
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/linked2", 0))
			_, err := w.v.Stat(w.c, w.c.Cwd, "linked", 0)
			w.ok(err)
			w.ok(w.v.Utimens(w.c, h, "", times56, empty))
			w.ok(w.v.Chmod(w.c, h, "", 0o755, empty))
		}, func(w *view) {
			st := w.hostStat("linked")
			assert.Equal(w.t, uint32(0o755), st.Mode&0o7777, "the set-user-ID bit stays cleared")
			assert.Equal(w.t, int64(6), st.Mtim.Sec)
		}},
		{"hard link, written through /proc/self/fd after the removal", func(w *view) {
			h := w.handle("d/linked2", unix.O_RDONLY)
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/linked2", 0))
			w.write("/proc/self/fd/"+strconv.Itoa(h.FD()), unix.O_APPEND, "more\n")
		}, func(w *view) {
			b, err := os.ReadFile(filepath.Join(w.dir, "linked"))
			require.NoError(w.t, err)
			assert.Equal(w.t, "two names\nmore\n", string(b))
		}},
		{"hard link, linked by descriptor after the removal", func(w *view) {
			h := w.handle("d/linked2", unix.O_RDONLY)
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/linked2", 0))
			w.ok(w.v.Link(w.c, h, "", w.c.Cwd, "e/l3", unix.AT_EMPTY_PATH))
			w.ok(w.v.Chmod(w.c, h, "", 0o640, empty))
		}, func(w *view) {
			st, st3 := w.hostStat("linked"), w.hostStat("e/l3")
			assert.Equal(w.t, st.Ino, st3.Ino, "one inode")
			assert.Equal(w.t, uint64(2), uint64(st.Nlink), "no other name left (the anchor went with the staging area)")
			assert.Equal(w.t, uint32(0o640), st.Mode&0o7777)
		}},
		{"hard link replaced by a rename", func(w *view) {
			h := w.handle("d/linked2", unix.O_RDONLY)
			w.ok(w.v.Rename(w.c, w.c.Cwd, "g", w.c.Cwd, "d/linked2", 0))
			w.ok(w.v.Chmod(w.c, h, "", 0o611, empty))
		}, func(w *view) {
			assert.Equal(w.t, uint32(0o611), w.hostStat("linked").Mode&0o7777)
			assert.Equal(w.t, uint32(0o644), w.hostStat("d/linked2").Mode&0o7777)
		}},
		{"two hard-link groups, changes interleaved", func(w *view) {
			require.NoError(w.t, os.Link(filepath.Join(w.dir, "g"), filepath.Join(w.dir, "e/g2")))
			h1 := w.handle("d/linked2", unix.O_RDONLY)
			h2 := w.handle("e/g2", unix.O_RDONLY)
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/linked2", 0))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "e/g2", 0))
			w.ok(w.v.Chmod(w.c, h1, "", 0o600, empty))
			w.ok(w.v.Chmod(w.c, h2, "", 0o640, empty))
			w.ok(w.v.Utimens(w.c, h2, "", times56, empty))
			w.ok(w.v.Chmod(w.c, h1, "", 0o611, empty))
		}, func(w *view) {
			assert.Equal(w.t, uint32(0o611), w.hostStat("linked").Mode&0o7777)
			st := w.hostStat("g")
			assert.Equal(w.t, uint32(0o640), st.Mode&0o7777)
			assert.Equal(w.t, int64(6), st.Mtim.Sec)
		}},
		{"file unlinked everywhere", func(w *view) {
			h := w.handle("f", unix.O_RDONLY)
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "f", 0))
			w.ok(w.v.Chmod(w.c, h, "", 0o600, empty))
			w.ok(w.v.Utimens(w.c, h, "", times56, empty))
			st, err := w.v.Stat(w.c, h, "", unix.AT_EMPTY_PATH)
			w.ok(err)
			assert.Equal(w.t, uint32(0o600), st.Mode&0o7777, "the view shows the change")
			assert.Equal(w.t, uint64(0), uint64(st.Nlink))
			require.ErrorIs(w.t, w.v.Link(w.c, h, "", w.c.Cwd, "f2", unix.AT_EMPTY_PATH), unix.ENOENT)
		}, func(w *view) {
			_, err := os.Lstat(filepath.Join(w.dir, "f"))
			assert.True(w.t, os.IsNotExist(err))
		}},
		{"removed directory", func(w *view) {
			h := w.handle("e", unix.O_RDONLY|unix.O_DIRECTORY)
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "e", unix.AT_REMOVEDIR))
			w.ok(w.v.Chmod(w.c, h, "", 0o700, empty))
			w.ok(w.v.Utimens(w.c, h, ".", nil, 0))
			w.ok(w.v.Setxattr(w.c, h, "", vfs.XattrOp{EmptyAt: true}, "user.x", []byte("1"), 0))
			st, err := w.v.Stat(w.c, h, "", unix.AT_EMPTY_PATH)
			w.ok(err)
			assert.Equal(w.t, uint32(0o700), st.Mode&0o7777)
		}, func(w *view) {
			_, err := os.Lstat(filepath.Join(w.dir, "e"))
			assert.True(w.t, os.IsNotExist(err))
			assert.Equal(w.t, uint32(0o755), w.hostStat(".").Mode&0o7777)
		}},
		{"directory renamed over", func(w *view) {
			h := w.handle("e", unix.O_RDONLY|unix.O_DIRECTORY)
			w.ok(w.v.Mkdir(w.c, w.c.Cwd, "e2", 0o751))
			w.ok(w.v.Rename(w.c, w.c.Cwd, "e2", w.c.Cwd, "e", 0))
			w.ok(w.v.Setxattr(w.c, h, "", vfs.XattrOp{EmptyAt: true}, "user.x", []byte("1"), 0))
			w.ok(w.v.Chmod(w.c, h, "", 0o700, empty))
		}, func(w *view) {
			assert.Equal(w.t, uint32(0o751), w.hostStat("e").Mode&0o7777)
			_, err := unix.Lgetxattr(filepath.Join(w.dir, "e"), "user.x", nil)
			assert.ErrorIs(w.t, err, unix.ENODATA)
		}},
		{"dot-dot of a removed directory", func(w *view) {
			h := w.handle("d/sub", unix.O_RDONLY|unix.O_DIRECTORY)
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/sub/y", 0))
			w.ok(w.v.Unlink(w.c, w.c.Cwd, "d/sub", unix.AT_REMOVEDIR))
			_, err := w.v.Stat(w.c, h, "../x", 0)
			w.ok(err)
			up, err := w.v.Chdir(w.c, h, "..", 0)
			w.ok(err)
			defer up.Release()
			w.write(filepath.Join(w.dir, "d/new"), unix.O_CREAT, "made from the removed dir's parent\n")
			_, err = w.v.Stat(w.c, up, "new", 0)
			w.ok(err)
		}, func(w *view) {
			_, err := os.Lstat(filepath.Join(w.dir, "d/sub"))
			assert.True(w.t, os.IsNotExist(err))
			w.hostStat("d/new")
		}},
	}
	for _, m := range treeMounts {
		t.Run(string(m), func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					w := newViewOn(t, m)
					tt.do(w)
					// An anchor name, too, is in the area of its file's mount.
					checkStagedOnMount(t, w, m, w.v.Journal())
					w.commit()
					tt.check(w)
				})
			}
		})
	}
}
