package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Paths relative to the working directory, and getcwd, on the fast path
// (docs/fastpath.md §4.5, rule 2): the supervisor publishes each process's
// view working directory to its agent, which makes such a path absolute
// with it, and answers getcwd from it.

// cwdNames are looked up relative to the working directory by the cwd
// mode: every one the agent takes natively (a file, a directory, a missing
// name, a missing name in a missing directory).
var cwdNames = []string{"file", "sub", "missing", "nodir/missing"}

// cwdForwardedNames are the ones it forwards, in part or in one mode: a
// symlink it would follow, a dangling one, paths with "." and ".." (which
// it follows only in a transaction), a name under a file (ENOTDIR, which
// it answers only under --passthrough).
var cwdForwardedNames = []string{"link", "dangling", "sub/../file", "./file", ".", "file/x"}

// TestFastLookupsCwd: under --passthrough, after a chdir, stat, access,
// open and readlink of paths relative to the working directory, and
// getcwd, answer as natively (getcwd with buffers too small too), and the
// supervisor serves only the first call of each site; without the option
// every one is served.
func TestFastLookupsCwd(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 1000
	c := command{Argv: append([]string{bin, "cwd", strconv.Itoa(n), dir}, cwdNames...), Dir: t.TempDir()}
	assert.Less(t, fastRun(t, c), n/10)
	slow := statsOf(t, passthrough, withoutFast(c))
	assert.GreaterOrEqual(t, slow["trapped_calls"], 4*len(cwdNames)*n+n)
	c.Argv = append([]string{bin, "cwd", "3", dir}, cwdForwardedNames...)
	fastRun(t, c)
	// The root: no slash is added.
	c.Argv = []string{bin, "cwd", strconv.Itoa(n), "/", "etc", "txexec-missing"}
	assert.Less(t, fastRun(t, c), n/10)
}

// TestFastLookupsCwdRenamed: a working directory renamed after the
// agent learnt its path, another directory made at that path, keeps
// answering relative lookups and getcwd as natively: under --passthrough
// the path no longer resolves to the directory's identity, in a
// transaction it is in the changed set; either way the agent forwards.
func TestFastLookupsCwdRenamed(t *testing.T) {
	_, bin := fastFixture(t)
	work := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(work, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(work, "d", "file"), []byte("in d\n"), 0o644))
	c := command{Argv: []string{bin, "cwdmove", "100", work}, Dir: work}
	fastRun(t, c)
	fastAsNative(t, c, 100, 1<<30)
}

// TestFastLookupsCwdSearch: a process whose working directory is below a
// directory it may not search (it dropped its privileges there) looks up
// relative paths and calls getcwd as natively, under --passthrough and in
// a transaction: the absolute path's walk fails with EACCES where the
// relative one does not, and the agent forwards it.
func TestFastLookupsCwdSearch(t *testing.T) {
	_, bin := fastFixture(t)
	work := t.TempDir()
	require.NoError(t, os.Chmod(work, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(work, "a", "b"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(work, "a"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(work, "a", "b", "f"), []byte("f\n"), 0o644))
	c := command{Argv: []string{bin, "cwddrop", "100", work}, Dir: work}
	fastRun(t, c)
	fastAsNative(t, c, 100, 1<<30)
}

// TestFastLookupsTxCwd: in a transaction, the same lookups and getcwd
// answer as natively, and all but a few run without the supervisor.
func TestFastLookupsTxCwd(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 1000
	c := command{Argv: append([]string{bin, "cwd", strconv.Itoa(n), dir}, cwdNames...), Dir: t.TempDir()}
	fastAsNative(t, c, 4*len(cwdNames)*n+n, n/10)
	c.Argv = append([]string{bin, "cwd", "3", dir}, cwdForwardedNames...)
	fastAsNative(t, c, 3, 1000)
	c.Argv = []string{bin, "cwd", strconv.Itoa(n), "/", "etc", "txexec-missing"}
	fastAsNative(t, c, 2*4*n+n, n/10)
}

// TestFastLookupsTxCwdChanged: relative lookups and getcwd in a working
// directory the transaction made, in one it renames while it is the
// working directory, and in one it removes, answer as natively: the
// agent forwards them (the path is in the changed set).
func TestFastLookupsTxCwdChanged(t *testing.T) {
	dir, bin := fastFixture(t)
	for _, d := range []string{"ren", "gone"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ren", "file"), []byte("in ren\n"), 0o644))
	c := command{Argv: []string{bin, "cwdtx", "20", dir}, Dir: dir}
	fastAsNative(t, c, 20, 1<<30)
}

// TestFastLookupsTxCwdHostChange: a host change, by a process txexec does
// not supervise, of a file a program reached by a path relative to its
// working directory aborts the transaction exactly as without the option.
func TestFastLookupsTxCwdHostChange(t *testing.T) {
	_, bin := fastFixture(t)
	tests := []hostChange{
		{"chmod", "chmod 0600 sub/b", "sub/b", "its mode or owner was changed by another process after it was read"},
		{"created", "echo surprise > sub/missing", "sub/missing", "created by another process after the transaction found it absent"},
	}
	work := t.TempDir()
	reads := fmt.Sprintf("(cd sub && %s paths 50 b missing > /dev/null)", bin)
	reset := func() {
		require.NoError(t, os.RemoveAll(filepath.Join(work, "sub")))
		require.NoError(t, os.Mkdir(filepath.Join(work, "sub"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(work, "sub", "b"), []byte("b\n"), 0o644))
	}
	hostChangeCases(t, work, reads, reset, 90, tests)
}

// TestFastLookupsCwdVfork: a vfork child that changes its working
// directory, in the address space it shares with its parent, and a
// posix_spawn whose child does (a chdir file action), leave the parent's
// relative lookups and getcwd answering as natively, under --passthrough
// and in a transaction, and on the fast path again once the child has
// left the address space. Beside a CLONE_VM child with a working
// directory of its own, and beside a CLONE_FS child that changed the one
// they share, they answer as natively too, every one forwarded (9 calls a
// round); after the CLONE_FS child has exited, on the fast path again.
func TestFastLookupsCwdVfork(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 1000
	c := command{Argv: []string{bin, "cwdvfork", strconv.Itoa(n), dir}, Dir: t.TempDir()}
	assert.Less(t, fastRun(t, c), 2*9*n+n/10)
	fastAsNative(t, c, 4*9*n, 2*9*n+n/10)
}
