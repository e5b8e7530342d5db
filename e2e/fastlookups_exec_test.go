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

// Failed execves on the fast path (docs/fastpath.md §15): once the view
// failed an execve with ENOENT or ENOTDIR, its call site reaches the agent,
// which answers the same failure without a stop of the tracer when the
// host gives it, and records it as the access it is; anything else is the
// real execve, which the tracer serves as before.

// execFixture adds to a fast-lookup fixture a script and a file that is
// not executable, and returns paths an exec loop tries that do not
// exist: absolute, relative, and under a missing directory.
func execFixture(t *testing.T) (dir, bin string, missing []string) {
	t.Helper()
	dir, bin = fastFixture(t)
	writeFiles(t, dir, map[string]string{"script": "#!/bin/sh\necho script \"$0\" \"$@\"\n", "plain": "not a program\n"})
	require.NoError(t, os.Chmod(filepath.Join(dir, "script"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "plain"), 0o644))
	missing = []string{filepath.Join(dir, "nothere"), "nothere", filepath.Join(dir, "gone", "x")}
	return dir, bin, missing
}

// execStops runs c in mode m and checks it prints want; it returns the
// execve stops the tracer served.
func execStops(t *testing.T, m mode, c command, want string) int {
	t.Helper()
	r, stats := runStats(t, m, c)
	require.Equal(t, 0, r.Status, r.Stderr)
	assert.Equal(t, want, r.Stdout, "%v %v", m, c.TxArgs)
	return stats["exec_stops"]
}

// TestFastLookupsExecFailures: an exec loop over missing paths prints the
// same errnos natively, in a transaction and under --passthrough, with
// and without the fast path, and execs a real program from the same call
// site at the end; with the fast path fewer than n/10 of its execves stop
// the tracer, without it every one does.
func TestFastLookupsExecFailures(t *testing.T) {
	dir, bin, missing := execFixture(t)
	const n = 1000
	c := command{Argv: append([]string{bin, "execloop", strconv.Itoa(n), "/bin/echo"}, missing...), Dir: dir}
	nat := run(t, native, c)
	require.Equal(t, 0, nat.Status, nat.Stderr)
	require.Contains(t, nat.Stdout, "errno=2\n")
	require.Contains(t, nat.Stdout, "\ndone\n")
	for _, m := range []mode{transaction, passthrough} {
		slow := execStops(t, m, withoutFast(c), nat.Stdout)
		assert.GreaterOrEqual(t, slow, n*len(missing), "%v without the fast path", m)
		fc := c
		fc.TxArgs = fastLookups
		fast := execStops(t, m, fc, nat.Stdout)
		assert.Less(t, fast, n/10, "%v with the fast path", m)
		t.Logf("%v: execve stops %d without the fast path, %d with it", m, slow, fast)
	}
}

// TestFastLookupsExecOthers: from a rewritten execve site, a path that
// exists but is not executable still fails EACCES, a dangling symlink
// ENOENT, a path under a file ENOTDIR, and a script still runs, as
// natively and without the fast path. The EACCES is the real execve,
// served by the tracer, at every call; the other two are decided as
// access decides them: the dangling symlink is the view's to resolve under
// --passthrough, the path under a file in a transaction (one stop per call
// each), the other natively.
func TestFastLookupsExecOthers(t *testing.T) {
	dir, bin, missing := execFixture(t)
	const n = 200
	plain, dangling, under := filepath.Join(dir, "plain"), filepath.Join(dir, "dangling"), filepath.Join(dir, "file", "x")
	c := command{Argv: []string{bin, "execloop", strconv.Itoa(n), filepath.Join(dir, "script"), missing[0], plain, dangling, under}, Dir: dir}
	nat := run(t, native, c)
	require.Equal(t, 0, nat.Status, nat.Stderr)
	require.Equal(t, fmt.Sprintf("execve %s errno=2\nexecve %s errno=13\nexecve %s errno=2\nexecve %s errno=20\nscript %s done\n",
		missing[0], plain, dangling, under, filepath.Join(dir, "script")), nat.Stdout)
	for _, m := range []mode{transaction, passthrough} {
		execStops(t, m, withoutFast(c), nat.Stdout)
		fc := c
		fc.TxArgs = fastLookups
		fast := execStops(t, m, fc, nat.Stdout)
		assert.GreaterOrEqual(t, fast, 2*n, "%v: the EACCES, and the dangling symlink or the path under a file", m)
		assert.Less(t, fast, 2*n+n/10, "%v: the missing path is the agent's, and one of the two", m)
	}
}

// TestFastLookupsExecHostChange: a transaction whose program found a
// program missing (from the agent, all but its first try) aborts, as
// without the fast path, when another process creates it, or the missing
// directory above it, before the commit.
func TestFastLookupsExecHostChange(t *testing.T) {
	_, bin := fastFixture(t)
	work := t.TempDir()
	reads := fmt.Sprintf("%s execloop 50 /bin/true %s %s > /dev/null", bin, filepath.Join(work, "missing"),
		filepath.Join(work, "gone", "x"))
	reset := func() {
		for _, name := range []string{"missing", "gone"} {
			require.NoError(t, os.RemoveAll(filepath.Join(work, name)))
		}
	}
	reset()
	c := command{Argv: []string{"sh", "-c", reads}, Dir: work}
	_, slow := runStats(t, transaction, withoutFast(c))
	c.TxArgs = fastLookups
	_, fast := runStats(t, transaction, c)
	require.GreaterOrEqual(t, slow["exec_stops"], 100)
	require.Less(t, fast["exec_stops"], 20, "the agent answered the failures")
	for _, tt := range []hostChange{
		{"created", "echo '#!/bin/sh' > missing && chmod +x missing", "missing", "created by another process after the transaction found it absent"},
		{"created directory", "mkdir gone", "gone", "created by another process after the transaction found it absent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := abortsAsWithout(t, work, reads, tt.outside, reset)
			assert.Equal(t, fmt.Sprintf("txexec: transaction 1 aborted: conflict on %s (%s)\n", filepath.Join(work, tt.path), tt.why), got)
		})
	}
}

// TestFastLookupsExecOwnChanges: a program the transaction writes where
// an exec loop found none runs from a rewritten site in a later process
// (the agent forwards a path the transaction changed), as natively; the
// failures of both loops are the agent's but the first (the second
// process gets the site with libc's known sites).
func TestFastLookupsExecOwnChanges(t *testing.T) {
	_, bin := fastFixture(t)
	script := fmt.Sprintf("%s execloop 20 /bin/true p; printf '#!/bin/sh\\necho made \"$@\"\\n' > p; chmod +x p; "+
		"%s execloop 20 \"$PWD/p\" missing", bin, bin)
	var out [2]string
	for i, m := range []mode{native, transaction} {
		work := t.TempDir()
		c := command{Argv: []string{"sh", "-c", script}, Dir: work, TxArgs: fastLookups}
		var r result
		if m == native {
			r = run(t, m, c)
		} else {
			var stats map[string]int
			r, stats = runStats(t, m, c)
			assert.Less(t, stats["exec_stops"], 20, "the agent answered the failures of both loops")
		}
		require.Equal(t, 0, r.Status, r.Stderr)
		assert.FileExists(t, filepath.Join(work, "p"))
		out[i] = r.Stdout
	}
	assert.Equal(t, "execve p errno=2\nexecve missing errno=2\nmade done\n", out[0])
	assert.Equal(t, out[0], out[1])
}
