package vfs

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/fastlookup"
)

// programRecord is the record of an lstat of path as the host answers it
// now, at the tree's current generation, made without the agent's
// decision: what a program writing its ring itself could feed (a path
// through a symlink, which the agent never takes).
func (e *fastEnv) programRecord(path string) fastlookup.Record {
	rec := fastlookup.Record{Generation: e.tree.Generation(), Nr: unix.SYS_NEWFSTATAT, Path: path}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		rec.Result = -int64(err.(unix.Errno))
		return rec
	}
	rec.Observed = true
	rec.Dev, rec.Ino, rec.Mode, rec.UID, rec.GID, rec.Size = st.Dev, st.Ino, st.Mode, st.Uid, st.Gid, st.Size
	rec.Mtime, rec.Ctime = st.Mtim, st.Ctim
	return rec
}

// TestFeedStaleParent: a change of the view between two records in the
// same directory is seen by the second, though the feed kept the
// directory the first one's parent path led to. The parent is reached
// through a symlink, whose path the changed set does not name, and the
// transaction's rename moves a directory it renamed before, which moves no
// generation of the tree: only the view's own generation tells.
func TestFeedStaleParent(t *testing.T) {
	cases := []struct {
		name   string
		change func(e *fastEnv)
	}{
		{"parent renamed again", func(e *fastEnv) {
			require.NoError(e.t, e.v.Rename(e.c, e.c.Cwd, "d/a/b/c", e.c.Cwd, "d/a/b/z", 0))
		}},
		{"parent replaced", func(e *fastEnv) {
			require.NoError(e.t, e.v.Rename(e.c, e.c.Cwd, "d/a/b/c", e.c.Cwd, "d/a/b/z", 0))
			require.NoError(e.t, e.v.Mkdir(e.c, e.c.Cwd, "d/a/b/c", 0o755))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newFastEnv(t, func(dir string) {
				fastTree(dir)
				must(os.Symlink("d/a/b/c", dir+"/l"))
			})
			// Both names changed before the first record: the change
			// below publishes nothing new.
			require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "d/a/b/c", e.c.Cwd, "d/a/b/z", 0))
			require.NoError(t, e.v.Rename(e.c, e.c.Cwd, "d/a/b/z", e.c.Cwd, "d/a/b/c", 0))
			require.NoError(t, e.feed(e.programRecord(e.abs("l/h"))))
			require.NoError(t, e.v.Doomed(), "l/h is the host's d/a/b/c/h in the view too")

			gen := e.tree.Generation()
			c.change(e)
			if c.name == "parent renamed again" {
				require.Equal(t, gen, e.tree.Generation(), "the tree's generation did not move")
			}
			require.NoError(t, e.feed(e.programRecord(e.abs("l/h"))))
			require.Error(t, e.v.Doomed(), "l/h is gone from the view, and the record observed it")
			assert.Contains(t, e.v.Doomed().Error(), e.abs("l/h"))
		})
	}
}

// TestFeedWalkAsFromRoot: the feed's walks, through the directories it
// keeps, find what walks of the whole paths from the root find, and leave
// the read set, the fast directories and the tree as those do: paths in
// one directory and in others, through a symlink (in the middle, at the
// end), absent names, a name under a file and under an absent directory,
// a passthrough subtree, a name in "/"; each path twice, so that the
// second walk of a directory's names goes through the kept directory.
func TestFeedWalkAsFromRoot(t *testing.T) {
	dir := t.TempDir()
	fastTree(dir)
	must(os.Symlink("d/a/b/c", dir+"/l"))
	must(os.Symlink("d/f", dir+"/lf"))
	var paths []string
	for _, p := range []string{"d/f", "d/g", "d/nothing", "d/a/b/c/h", "l/h", "l/nothing", "e/x", "e/y",
		"lf/x", "d/f/x", "nothing/x", "l", "d/a/b", "d/empty/x"} {
		paths = append(paths, dir+"/"+p)
	}
	paths = append(paths, "/dev/null", "/proc/self/status", "/tmp")
	paths = append(paths, paths...)

	fromRoot := newFastEnvOver(t, dir)
	fed := newFastEnvOver(t, dir)
	fromRoot.v.mu.Lock()
	defer fromRoot.v.mu.Unlock()
	fed.v.mu.Lock()
	defer fed.v.mu.Unlock()
	root := &Caller{Cred: rootCred}
	for _, p := range paths {
		want, wantErr := fromRoot.v.walkLocked(root, fromRoot.v.root, p, false /* followFinal */, &walkState{})
		got, gotErr := fed.v.feedWalkLocked(p)
		assert.Equal(t, wantErr, gotErr, p)
		assert.Equal(t, want.pass, got.pass, p)
		assert.Equal(t, want.passPath, got.passPath, p)
		assert.Equal(t, want.name, got.name, p)
		assert.Equal(t, want.node == nil, got.node == nil, p)
		if want.node != nil && got.node != nil {
			assert.Equal(t, want.node.host, got.node.host, p)
		}
		assert.Equal(t, want.dir == nil, got.dir == nil, p)
		if want.dir != nil && got.dir != nil {
			assert.Equal(t, want.dir.host, got.dir.host, p)
		}
	}
	assert.NotEmpty(t, fed.v.feedDirs, "the feed kept directories")
	assert.NoError(t, fromRoot.v.doomed)
	assert.NoError(t, fed.v.doomed)
	assert.Equal(t, fromRoot.v.reads, fed.v.reads)
	for _, p := range append(paths, dir, dir+"/d/a", dir+"/d/a/b/c", dir+"/d/empty", dir+"/e") {
		assert.Equal(t, fromRoot.tree.IsFastDir(p), fed.tree.IsFastDir(p), p)
	}
	assert.Equal(t, fromRoot.tree.Generation(), fed.tree.Generation())
}
