package fastlookup

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func newTree(t *testing.T) *Tree {
	tr, err := NewTree()
	require.NoError(t, err)
	t.Cleanup(tr.Close)
	tr.Enable(true)
	return tr
}

func sharedChanged(tr *Tree, path string) Kind { return tr.sharedKind(PathKey(path)) }

func sharedFastDir(tr *Tree, path string) (dev, ino uint64, ok bool) {
	return tr.sharedFastDir(PathKey(path))
}

func TestTreePublication(t *testing.T) {
	tr := newTree(t)
	g0 := tr.Generation()
	tr.Change("/a/b", ChangedSubtree)
	assert.Equal(t, ChangedSubtree, sharedChanged(tr, "/a/b"), "entries are stored at once")
	assert.Equal(t, g0, tr.Generation(), "the generation moves only at Publish")
	g1 := tr.Publish()
	assert.Greater(t, g1, g0)
	at, ok := tr.ChangedAt("/a/b/c/d")
	assert.True(t, ok)
	assert.Equal(t, g1, at, "a path under a changed subtree changed with it")
	assert.Equal(t, g1, tr.Publish(), "nothing new: the generation stays")

	tr.Change("/a/b", ChangedSubtree)
	tr.Change("/a/b", ChangedSelf) // never lowers the kind
	assert.Equal(t, g1, tr.Publish())
	assert.Equal(t, ChangedSubtree, sharedChanged(tr, "/a/b"))

	tr.Change("/a", ChangedSelf)
	g2 := tr.Publish()
	assert.Greater(t, g2, g1)
	assert.Equal(t, ChangedSelf, sharedChanged(tr, "/a"))
	_, ok = tr.ChangedAt("/a/x")
	assert.False(t, ok, "a directory whose own attributes changed does not cover its other entries")
	tr.Change("/a", ChangedSubtree)
	g3 := tr.Publish()
	assert.Equal(t, ChangedSubtree, sharedChanged(tr, "/a"), "the kind is raised")
	at, _ = tr.ChangedAt("/a")
	assert.Equal(t, g2, at, "the first change of the path counts")
	at, _ = tr.ChangedAt("/a/x")
	assert.Equal(t, g3, at)

	tr.ChangeObject(5, 6)
	g4 := tr.Publish()
	at, ok = tr.ObjectChangedAt(5, 6)
	assert.True(t, ok)
	assert.Equal(t, g4, at)
	_, ok = tr.ObjectChangedAt(5, 7)
	assert.False(t, ok)
	assert.True(t, tr.Enabled())
}

func TestTreeFastDirs(t *testing.T) {
	tr := newTree(t)
	for i, p := range []string{"/", "/usr", "/usr/lib", "/usr/lib/x", "/usr/include", "/etc"} {
		require.True(t, tr.AddFastDir(p, 1, uint64(10+i)), p)
	}
	dev, ino, ok := sharedFastDir(tr, "/usr/lib/x")
	require.True(t, ok)
	assert.Equal(t, [2]uint64{1, 13}, [2]uint64{dev, ino})

	tr.Change("/usr/lib", ChangedSubtree) // a rename of /usr/lib, say
	tr.Publish()
	for _, p := range []string{"/usr/lib", "/usr/lib/x"} {
		_, _, ok := sharedFastDir(tr, p)
		assert.False(t, ok, "%s is under a changed name", p)
		assert.False(t, tr.IsFastDir(p), p)
	}
	for _, p := range []string{"/", "/usr", "/usr/include", "/etc"} {
		_, _, ok := sharedFastDir(tr, p)
		assert.True(t, ok, p)
	}
	assert.False(t, tr.AddFastDir("/usr/lib/y", 1, 99), "never under a changed name")

	tr.Change("/etc", ChangedSelf) // an entry of /etc changed
	tr.Publish()
	assert.True(t, tr.IsFastDir("/etc"), "its other entries are still the host's")
}

// TestTreeFastDirsBelowSlowDir: a fast directory under one that is not
// fast is removed with it all the same.
func TestTreeFastDirsBelowSlowDir(t *testing.T) {
	tr := newTree(t)
	require.True(t, tr.AddFastDir("/a/b/c", 1, 3))
	tr.Change("/a", ChangedSubtree)
	tr.Publish()
	_, _, ok := sharedFastDir(tr, "/a/b/c")
	assert.False(t, ok)
}

func TestTreeOverflowDisables(t *testing.T) {
	tr := newTree(t)
	for i := 0; i < maxLoad(ChangedN); i++ {
		tr.Change(fmt.Sprintf("/f%d", i), ChangedSubtree)
	}
	tr.Publish()
	require.True(t, tr.Enabled())
	require.False(t, tr.Overflowed())
	tr.Change("/one-more", ChangedSubtree)
	tr.Publish()
	assert.True(t, tr.Overflowed())
	assert.False(t, tr.Enabled(), "a full changed set turns the fast path off")
	tr.Enable(true)
	assert.False(t, tr.Enabled(), "for good")
	_, ok := tr.ChangedAt("/one-more")
	assert.True(t, ok, "the supervisor's own copy still has it")
}

// TestTreeReadOnlyFD: the descriptor for the programs maps read-only, and
// nobody can map the tree writable any more.
func TestTreeReadOnlyFD(t *testing.T) {
	tr := newTree(t)
	fd, err := tr.ReadOnlyFD()
	require.NoError(t, err)
	defer unix.Close(fd)
	size := int(len(tr.mem.mem))
	_, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	assert.ErrorIs(t, err, unix.EACCES)
	_, err = unix.Mmap(tr.mem.fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	assert.ErrorIs(t, err, unix.EPERM, "sealed against writable mappings")
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)
	tr.Change("/x", ChangedSubtree)
	g := tr.Publish()
	assert.Equal(t, g, *(*uint64)(ptrAt(m, 8)), "the program's mapping sees the generation")
	assert.ErrorIs(t, unix.Mprotect(m, unix.PROT_READ|unix.PROT_WRITE), unix.EACCES)
	assert.ErrorIs(t, unix.Ftruncate(tr.mem.fd, 4096), unix.EPERM, "sealed against shrinking")
}

func TestDecide(t *testing.T) {
	tr := newTree(t)
	for _, p := range []string{"/", "/usr", "/usr/include", "/usr/lib"} {
		require.True(t, tr.AddFastDir(p, 1, 1))
	}
	tr.Publish()
	cases := []struct {
		path string
		ok   bool
	}{
		{"/usr/include/stdio.h", true},
		{"/usr", true},
		{"/usr/share/x", false}, // /usr/share is no fast directory
		{"/usr/include/../lib/x", false},
		{"usr/include/stdio.h", false},
		{"/usr/include/", false},
		{"/" + strings.Repeat("x", PathMax), false},
	}
	for _, c := range cases {
		_, ok := tr.Decide(c.path)
		assert.Equal(t, c.ok, ok, c.path)
	}
	g0 := tr.Generation()
	tr.Change("/usr/include", ChangedSelf)
	tr.Change("/usr/lib/a", ChangedSubtree)
	tr.ChangeObject(1, 99)
	g, ok := tr.Decide("/usr/include/stdio.h")
	assert.True(t, ok, "the directory's own attributes changed, not its other entries")
	assert.Equal(t, g0, g, "not published yet")
	g1 := tr.Publish()
	for _, p := range []string{"/usr/include", "/usr/lib/a", "/usr/lib/a/b"} {
		g, ok := tr.Decide(p)
		assert.False(t, ok, p)
		assert.Equal(t, g1, g)
	}
	_, ok = tr.Decide("/usr/lib/b")
	assert.True(t, ok)
	assert.True(t, tr.ObjectChanged(1, 99))
	assert.False(t, tr.ObjectChanged(1, 98))
	tr.Enable(false)
	_, ok = tr.Decide("/usr/lib/b")
	assert.False(t, ok, "disabled")
}

// TestTreeDirIDs: a fast directory is known by its identity too, with the
// prefix that hashes a name in it as its path; it stops being one with its
// path (a change of a subtree above), and an identity found at two paths
// (a bind mount) is none. The tree keeps the path a record names.
func TestTreeDirIDs(t *testing.T) {
	tr := newTree(t)
	require.True(t, tr.AddFastDir("/", 1, 2))
	require.True(t, tr.AddFastDir("/usr/share/man", 1, 20))
	require.True(t, tr.AddFastDir("/usr/lib", 1, 30))
	for _, c := range []struct {
		dir  string
		ino  uint64
		name string
	}{{"/", 2, "etc"}, {"/usr/share/man", 20, "man1"}} {
		prefix, ok := tr.sharedDirID(1, c.ino)
		require.True(t, ok, c.dir)
		want := "/" + c.name
		if c.dir != "/" {
			want = c.dir + "/" + c.name
		}
		assert.Equal(t, PathKey(want), key(hashOn(prefix, c.name)), "the prefix continues into %s", want)
		p, ok := tr.DirPath(1, c.ino)
		assert.True(t, ok)
		assert.Equal(t, c.dir, p)
	}
	_, ok := tr.sharedDirID(1, 99)
	assert.False(t, ok, "no fast directory has that identity")

	_, ok = tr.DecideAt(1, 20, "man1")
	assert.True(t, ok)
	for _, name := range []string{"", ".", "..", "a/b"} {
		_, ok = tr.DecideAt(1, 20, name)
		assert.False(t, ok, "%q is not one clean name", name)
	}
	tr.Change("/usr/share/man/man1", ChangedSubtree)
	tr.Publish()
	_, ok = tr.DecideAt(1, 20, "man1")
	assert.False(t, ok, "a changed name is forwarded")
	_, ok = tr.DecideAt(1, 20, "man2")
	assert.True(t, ok, "its neighbours are not")
	tr.Change("/usr/share/man/man3", ChangedSelf)
	tr.Publish()
	_, ok = tr.DecideAt(1, 20, "man3")
	assert.False(t, ok, "nor is a name whose attributes changed")

	tr.Change("/usr/share", ChangedSubtree)
	tr.Publish()
	_, ok = tr.sharedDirID(1, 20)
	assert.False(t, ok, "gone with its path")
	p, ok := tr.DirPath(1, 20)
	assert.True(t, ok, "kept for the records made before")
	assert.Equal(t, "/usr/share/man", p)

	require.True(t, tr.AddFastDir("/mnt/lib", 1, 30)) // a bind mount of /usr/lib
	_, ok = tr.sharedDirID(1, 30)
	assert.False(t, ok, "an identity at two paths is no fast directory by identity")
	assert.True(t, tr.IsFastDir("/usr/lib"), "by path it still is")
	p, _ = tr.DirPath(1, 30)
	assert.Equal(t, "/usr/lib", p)
	tr.Enable(false)
	_, ok = tr.DecideAt(1, 2, "etc")
	assert.False(t, ok, "disabled")
}

// TestTreeLinks: a symlink published is replaced by its target in the
// middle of a path, and at its end only when the call follows it; one
// changed (or under a changed subtree) is forwarded; a loop ends at
// maxLinks; an entry never changes once published.
func TestTreeLinks(t *testing.T) {
	tr := newTree(t)
	require.True(t, tr.AddLink("/lib", "/usr/lib"))
	require.True(t, tr.AddLink("/usr/bin/cc", "/etc/alternatives/cc"))
	require.True(t, tr.AddLink("/etc/alternatives/cc", "/usr/bin/gcc"))
	require.True(t, tr.AddLink("/r", "/"))
	for _, c := range []struct {
		path   string
		follow bool
		want   string
	}{
		{"/lib/x86_64-linux-gnu/libc.so.6", false, "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{"/lib", false, "/lib"},
		{"/lib", true, "/usr/lib"},
		{"/usr/bin/cc", false, "/usr/bin/cc"},
		{"/usr/bin/cc", true, "/usr/bin/gcc"},
		{"/r/lib/x", false, "/usr/lib/x"},
		{"/r", true, "/"},
		{"/usr/lib", true, "/usr/lib"},
	} {
		got, ok := tr.Resolve(c.path, c.follow)
		require.True(t, ok, c.path)
		assert.Equal(t, c.want, got, "%s follow=%v", c.path, c.follow)
	}
	assert.True(t, tr.AddLink("/lib", "/usr/lib"), "the same again")
	assert.False(t, tr.AddLink("/lib", "/elsewhere"), "never changed once published")
	target, _ := tr.Link("/lib")
	assert.Equal(t, "/usr/lib", target)

	require.True(t, tr.AddLink("/a", "/b"))
	require.True(t, tr.AddLink("/b", "/a"))
	_, ok := tr.Resolve("/a/x", false)
	assert.False(t, ok, "a loop is forwarded")

	tr.Change("/etc/alternatives/cc", ChangedSubtree)
	tr.Publish()
	_, ok = tr.Resolve("/usr/bin/cc", true)
	assert.False(t, ok, "a changed link on the way")
	got, ok := tr.Resolve("/usr/bin/cc", false)
	assert.True(t, ok)
	assert.Equal(t, "/usr/bin/cc", got)
	tr.Change("/", ChangedSelf)
	tr.Publish()
	_, ok = tr.Resolve("/lib/x", false)
	assert.True(t, ok, "the root's own attributes do not cover its entries")

	assert.False(t, tr.AddLink("/etc/alternatives/cc/x", "/y"), "under a changed subtree")

	tr.Change("/d", ChangedSelf)
	g := tr.Publish()
	_, ok = tr.NameChangedAt("/d")
	assert.False(t, ok, "its own attributes only")
	at, ok := tr.NameChangedAt("/etc/alternatives/cc/x")
	assert.True(t, ok)
	assert.Less(t, at, g, "the subtree above, at its first change")
	assert.False(t, tr.AddLink("/long", "/"+strings.Repeat("x", PathMax)), "a target that does not fit")
}

// TestTreeNatives: an own object added to the natives table is found by
// the agent's check, another identity (with the same hash's slot or not)
// is not, a dropped one never again, and a full table adds no more.
func TestTreeNatives(t *testing.T) {
	tr := newTree(t)
	require.True(t, tr.AddNative(5, 6))
	assert.True(t, tr.AddNative(5, 6), "again: still there")
	assert.True(t, tr.NativeFstat(5, 6))
	assert.False(t, tr.NativeFstat(5, 7))
	assert.False(t, tr.NativeFstat(6, 6))
	require.True(t, tr.AddNative(5, 7))
	tr.DropNative(5, 6)
	assert.False(t, tr.NativeFstat(5, 6), "dropped")
	assert.True(t, tr.NativeFstat(5, 7), "the probe goes on past a dropped slot")
	assert.False(t, tr.AddNative(5, 6), "dropped for good")
	assert.False(t, tr.NativeFstat(5, 6))
	tr.DropNative(9, 9) // never added: nothing to drop, and never added after
	assert.False(t, tr.AddNative(9, 9))

	added := 0
	for i := uint64(0); i < NativesN; i++ {
		if tr.AddNative(100, i) {
			added++
		}
	}
	assert.Equal(t, maxLoad(NativesN)-2, added, "the table stops at its load limit")
	assert.True(t, tr.NativeFstat(100, 0))
	assert.False(t, tr.NativeFstat(100, NativesN-1))
}
