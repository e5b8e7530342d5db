package syscalls

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/interpose"
)

// planFor is the plan of an exec of the host file p, as planExecFile makes
// it.
func planFor(t *testing.T, p string) interpose.ExecPlan {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(p, &st))
	return interpose.ExecPlan{Path: p, Expect: interpose.FileID{Dev: st.Dev, Ino: st.Ino}}
}

// TestNameExec: the kernel is given a path ending in the name the program
// was executed by, which leads to the very file that was checked.
func TestNameExec(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	require.NoError(t, os.WriteFile(prog, []byte("\x7fELF"), 0o755))
	require.NoError(t, os.Symlink("prog", filepath.Join(dir, "alias")))
	links, err := NewExecLinks(t.TempDir())
	require.NoError(t, err)
	defer links.Close()
	k := &Kernel{ExecLinks: links, Logf: t.Logf}

	// Its own name: its own path.
	plan := planFor(t, prog)
	k.nameExec(&plan, "./prog", "prog", false)
	assert.Equal(t, prog, plan.Path)
	assert.Nil(t, plan.Cleanup)

	// An absolute symlink to it: the path as given.
	plan = planFor(t, prog)
	k.nameExec(&plan, filepath.Join(dir, "alias"), "alias", false)
	assert.Equal(t, filepath.Join(dir, "alias"), plan.Path)
	assert.Equal(t, prog, plan.Program)

	// A relative one, or a script's interpreter: a link of that name.
	for _, script := range []bool{false, true} {
		plan = planFor(t, prog)
		k.nameExec(&plan, "alias", "alias", script)
		assert.Equal(t, "alias", filepath.Base(plan.Path))
		assert.Equal(t, prog, plan.Program)
		got, err := os.Readlink(plan.Path)
		require.NoError(t, err)
		assert.Equal(t, prog, got)
		require.NotNil(t, plan.Cleanup)
		plan.Cleanup()
		_, err = os.Lstat(filepath.Dir(plan.Path))
		assert.True(t, os.IsNotExist(err), "the link and its directory are gone")
	}

	// An absolute path that now leads elsewhere on the host (the view
	// resolved it differently): a link, never the path.
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, nil, 0o755))
	plan = planFor(t, prog)
	k.nameExec(&plan, other, "other", false)
	assert.NotEqual(t, other, plan.Path)
	got, err := os.Readlink(plan.Path)
	require.NoError(t, err)
	assert.Equal(t, prog, got)
	plan.Cleanup()
}

// TestExecLinksPrivate: the directory is searchable by others only when
// txexec runs as root, and never listable or writable by them.
func TestExecLinksPrivate(t *testing.T) {
	links, err := NewExecLinks(t.TempDir())
	require.NoError(t, err)
	fi, err := os.Stat(links.dir)
	require.NoError(t, err)
	want := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		want = 0o711
	}
	assert.Equal(t, want, fi.Mode().Perm())
	require.NoError(t, links.Close())
	_, err = os.Stat(links.dir)
	assert.True(t, os.IsNotExist(err))
}

// TestExecLinksStaleRemoved: a directory left by a killed txexec (no longer
// locked) is removed by the next one; one in use is kept.
func TestExecLinksStaleRemoved(t *testing.T) {
	parent := t.TempDir()
	live, err := NewExecLinks(parent)
	require.NoError(t, err)
	defer live.Close()
	stale := filepath.Join(parent, execLinksPrefix+"0123456789abcdef")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "1"), 0o700))
	require.NoError(t, os.Symlink("/bin/true", filepath.Join(stale, "1", "x")))

	defer func(age time.Duration) { staleExecLinksAge = age }(staleExecLinksAge)
	staleExecLinksAge = 0
	other, err := NewExecLinks(parent)
	require.NoError(t, err)
	defer other.Close()
	_, err = os.Stat(stale)
	assert.True(t, os.IsNotExist(err), "the stale directory is removed")
	_, err = os.Stat(live.dir)
	assert.NoError(t, err, "the live one is kept")
}

// TestExecLinksLazy: LazyExecLinks makes its directory at the first link
// only, so a run that needs none leaves its parent untouched; a link after
// Close fails rather than make a directory nobody removes.
func TestExecLinksLazy(t *testing.T) {
	parent := t.TempDir()
	unused := LazyExecLinks(parent)
	ents, err := os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing made before a link")
	require.NoError(t, unused.Close())
	_, _, err = unused.link("x", "/bin/true")
	assert.Error(t, err, "no link after Close")
	ents, err = os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, ents)

	used := LazyExecLinks(parent)
	p, cleanup, err := used.link("x", "/bin/true")
	require.NoError(t, err)
	got, err := os.Readlink(p)
	require.NoError(t, err)
	assert.Equal(t, "/bin/true", got)
	cleanup()
	ents, err = os.ReadDir(parent)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "the directory, made at the first link")
	require.NoError(t, used.Close())
	ents, err = os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, ents, "and removed by Close")
}
