package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// The fast path for read-only lookups (--fast-lookups, docs/fastpath.md),
// step 1 under --passthrough: real programs, compiled here, run natively
// and under txexec --passthrough --fast-lookups; their output must be the
// same, and TXEXEC_STATS's trapped_calls says whether the lookups reached
// the supervisor.

var fastLookups = []string{"--fast-lookups"}

// noFastLookups turns the fast path off: every trapped call reaches the
// supervisor, as the "without the option" side of a comparison.
var noFastLookups = []string{"--no-fast-lookups"}

// withoutFast is c with the fast path off.
func withoutFast(c command) command {
	c.TxArgs = append(append([]string(nil), c.TxArgs...), noFastLookups...)
	return c
}

// fastRun runs c natively and under --passthrough --fast-lookups, checks
// that both print the same, and returns the calls the supervisor served.
func fastRun(t *testing.T, c command) int {
	t.Helper()
	nat := run(t, native, c)
	require.Equal(t, 0, nat.Status, nat.Stderr)
	c.TxArgs = fastLookups
	st := statsOf(t, passthrough, c)
	c.Env = nil
	got := run(t, passthrough, c)
	require.Equal(t, 0, got.Status, got.Stderr)
	assert.Equal(t, nat.Stdout, got.Stdout)
	return st["trapped_calls"]
}

// fastLoop runs the fixture bin's mode with n and arg, in dir, natively
// and under --passthrough --fast-lookups: the same output, and fewer than
// n/10 calls served (all but the first of each site run natively). It
// returns the command, for more runs of it.
func fastLoop(t *testing.T, dir, bin, mode string, n int, arg string) command {
	t.Helper()
	c := command{Argv: []string{bin, mode, strconv.Itoa(n), arg}, Dir: dir}
	assert.Less(t, fastRun(t, c), n/10)
	return c
}

func fastFixture(t *testing.T) (dir, bin string) {
	testenv.NeedRoot(t, "txexec supervises as root")
	dir = t.TempDir()
	bin = buildC(t, dir, "fastlookups", "fastlookups")
	writeFiles(t, dir, map[string]string{"file": "x\n"})
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink("file", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("nothere", filepath.Join(dir, "dangling")))
	return dir, bin
}

// TestFastLookupsLoop: 10,000 stats of a C loop answer as natively, and
// all but the first call of the site run without the supervisor; without
// the option every one is served.
func TestFastLookupsLoop(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 10000
	c := fastLoop(t, dir, bin, "loop", n, filepath.Join(dir, "file"))
	slow := statsOf(t, passthrough, withoutFast(c))
	assert.GreaterOrEqual(t, slow["trapped_calls"], n)
}

// TestFastLookupsStatic: a static binary has glibc's call sites too and
// gets the agent like a dynamic one.
func TestFastLookupsStatic(t *testing.T) {
	dir, _ := fastFixture(t)
	bin := buildC(t, dir, "fastlookups", "fastlookups-static", "-static")
	fastLoop(t, dir, bin, "loop", 10000, filepath.Join(dir, "file"))
}

// TestFastLookupsSlowPaths: a multi-threaded process is not rewritten and
// a Go program gets no agent: both work, every lookup served.
func TestFastLookupsSlowPaths(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 2000
	c := command{Argv: []string{bin, "threads", strconv.Itoa(n), filepath.Join(dir, "file")}, Dir: dir}
	assert.GreaterOrEqual(t, fastRun(t, c), n)

	gofix := buildGoFixture(t, dir)
	work := t.TempDir()
	nat := run(t, native, command{Argv: []string{gofix}, Dir: work})
	require.Equal(t, 0, nat.Status, nat.Stderr)
	work = t.TempDir()
	got := run(t, passthrough, command{Argv: []string{gofix}, Dir: work, TxArgs: fastLookups})
	assert.Equal(t, nat, got)
}

// TestFastLookupsForwards: symlinks the caller follows, "..", relative
// paths, /proc and missing paths, through every call of the fast path, all
// answer as natively, most from rewritten sites (forwarded or not).
func TestFastLookupsForwards(t *testing.T) {
	dir, bin := fastFixture(t)
	c := command{Argv: []string{bin, "mix", "20", dir}, Dir: dir}
	fast := fastRun(t, c)
	slow := statsOf(t, passthrough, withoutFast(c))["trapped_calls"]
	assert.Less(t, fast, slow-200, "the fast path took too few of the calls")
}

// TestFastLookupsOpenLoop: 10,000 read-only opens of a C loop (and of a
// static one) answer as natively, all but the first of the site without
// the supervisor; without the option every one is served.
func TestFastLookupsOpenLoop(t *testing.T) {
	dir, bin := fastFixture(t)
	static := buildC(t, dir, "fastlookups", "fastlookups-static", "-static")
	const n = 10000
	for _, b := range []string{bin, static} {
		c := command{Argv: []string{b, "openloop", strconv.Itoa(n), filepath.Join(dir, "file")}, Dir: dir}
		assert.Less(t, fastRun(t, c), n/10, b)
	}
	c := command{Argv: []string{bin, "openloop", strconv.Itoa(n), filepath.Join(dir, "file")}, Dir: dir}
	assert.GreaterOrEqual(t, statsOf(t, passthrough, withoutFast(c))["trapped_calls"], n)
}

// TestFastLookupsOpenNocancel: glibc's own opens (opendir's
// __open_nocancel, as ld.so's of libraries) have a longer site pattern
// (docs/fastpath.md §4.4); they too run without the supervisor after the
// site's first call.
func TestFastLookupsOpenNocancel(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 5000
	c := fastLoop(t, dir, bin, "opendirloop", n, dir)
	assert.GreaterOrEqual(t, statsOf(t, passthrough, withoutFast(c))["trapped_calls"], n)
}

// TestFastLookupsOldStat: the old stat and lstat system calls (glibc's
// __xstat and __lxstat) run without the supervisor after their sites'
// first calls, as newfstatat does.
func TestFastLookupsOldStat(t *testing.T) {
	dir, bin := fastFixture(t)
	fastLoop(t, dir, bin, "xstatloop", 2000, filepath.Join(dir, "file"))
}

// TestFastLookupsKnownSites: the sites rewritten in one process are
// rewritten in the next one's libc with its first rewrite: 40 processes
// that each stat, access and readlink a file once trap hardly more calls
// than 40 that only stat it (without, each would trap two more).
func TestFastLookupsKnownSites(t *testing.T) {
	dir, bin := fastFixture(t)
	const procs = 40
	loop := func(mode string) command {
		script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do %s %s 1 %s || exit 1; i=$((i+1)); done`,
			procs, bin, mode, filepath.Join(dir, "file"))
		return command{Argv: []string{"sh", "-c", script}, Dir: dir}
	}
	one, three := fastRun(t, loop("site")), fastRun(t, loop("sites"))
	t.Logf("trapped calls: %d with one site a process, %d with three", one, three)
	assert.Less(t, three-one, procs/2)
}

// TestFastLookupsKnownSitesAtExec: a static program's known sites are
// rewritten at its exec stop (docs/fastpath.md §4.4): after the first
// process, its calls reach the agent without a single notification, where
// each process cost one before (its first call, with which the batch
// came).
func TestFastLookupsKnownSitesAtExec(t *testing.T) {
	dir, _ := fastFixture(t)
	bin := buildC(t, dir, "fastlookups", "fastlookups-static", "-static")
	const procs = 40
	loop := func(n int) command {
		script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do %s sites %d %s || exit 1; i=$((i+1)); done`,
			procs, bin, n, filepath.Join(dir, "file"))
		return command{Argv: []string{"sh", "-c", script}, Dir: dir}
	}
	// Both loops make the calls the agent forwards (the startup's
	// readlink of /proc/self/exe, printf's fstat of a descriptor on /dev);
	// the second a stat, an access and a readlink of a file too.
	none, some := fastRun(t, loop(0)), fastRun(t, loop(1))
	t.Logf("trapped calls: %d for %d processes without lookups, %d with", none, procs, some)
	assert.Less(t, some-none, procs/4)
}

// TestFastLookupsByDescriptor: openat and fstatat relative to an O_PATH
// descriptor of a directory, and fstatat of a descriptor with
// AT_EMPTY_PATH, run natively after their sites' first calls, except
// relative to a directory of /proc.
func TestFastLookupsByDescriptor(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 3000
	c := fastLoop(t, dir, bin, "dirloop", n, dir)
	assert.GreaterOrEqual(t, statsOf(t, passthrough, withoutFast(c))["trapped_calls"], 3*n)

	// Relative to a descriptor on a file system mounted under /proc, /sys
	// or /dev, every lookup is forwarded; elsewhere not.
	const m = 500
	writeFiles(t, dir, map[string]string{"version": "v\n"})
	proc := command{Argv: []string{bin, "fsdir", strconv.Itoa(m), "/proc"}, Dir: dir}
	assert.GreaterOrEqual(t, fastRun(t, proc), 2*m)
	own := command{Argv: []string{bin, "fsdir", strconv.Itoa(m), dir}, Dir: dir}
	assert.Less(t, fastRun(t, own), m/5)
}

// TestFastLookupsOpenMix: opens (read-only, O_NOFOLLOW, O_DIRECTORY,
// O_PATH with and without O_NOFOLLOW) of a file, a symlink, a dangling
// one, a "..", a directory, a relative path, /proc and /; the same and
// fstatat and statx relative to a directory descriptor (read-only and
// O_PATH) and of descriptors with AT_EMPTY_PATH (a pipe's among them); an
// open for writing through a rewritten site; and descriptors opened
// natively, then used in calls the supervisor serves (fchdir, getdents64):
// all answer as natively, most without the supervisor.
func TestFastLookupsOpenMix(t *testing.T) {
	dir, bin := fastFixture(t)
	c := command{Argv: []string{bin, "openmix", "20", dir}, Dir: dir}
	fast := fastRun(t, c)
	slow := statsOf(t, passthrough, withoutFast(c))["trapped_calls"]
	assert.Less(t, fast, slow/2, "the fast path took too few of the calls")
	_, err := os.Stat(filepath.Join(dir, "sub", "w"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestFastLookupsProcesses: a program that closes every descriptor, and a
// vfork child's lookups, work and take the fast path.
func TestFastLookupsProcesses(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 5000
	for _, mode := range []string{"closeall", "vfork"} {
		c := command{Argv: []string{bin, mode, strconv.Itoa(n), filepath.Join(dir, "file")}, Dir: dir}
		assert.Less(t, fastRun(t, c), n, mode)
	}
}

// TestFastLookupsChroot: after a chroot, which the supervisor emulates, the
// process's agent forwards every lookup and its later images get none: an
// absolute path names the object under the new root, as natively.
func TestFastLookupsChroot(t *testing.T) {
	dir, bin := fastFixture(t)
	buildC(t, dir, "fastlookups", "fastlookups-static", "-static")
	const n = 1000
	c := command{Argv: []string{bin, "chroot", strconv.Itoa(n), dir}, Dir: dir}
	fastRun(t, c)
}

// TestFastLookupsAgentPageWrites: the agent page lets only lookups through.
// Opens for writing and unlinks made from its own system-call instruction
// are notified (the filter's check of openat's flags), stats and
// read-only opens are not.
func TestFastLookupsAgentPageWrites(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 1000
	trapped := func(what string) int {
		c := command{Argv: []string{bin, "agent", strconv.Itoa(n), what, dir}, Dir: dir, TxArgs: fastLookups}
		return statsOf(t, passthrough, c)["trapped_calls"]
	}
	assert.GreaterOrEqual(t, trapped("open"), 2*n)
	assert.Less(t, trapped("read"), n/10)
	assert.Less(t, trapped("stat"), n/10)
	_, err := os.Stat(filepath.Join(dir, "f"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestFastLookupsOptionChecks: the option is refused, in one line, where
// this step does not support it.
func TestFastLookupsOptionChecks(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	for _, args := range [][]string{
		{"--fast-lookups", "--trace"},
		{"--fast-lookups", "--in-program"},
		{"--fast-lookups", "--deterministic"},
		{"--fast-lookups", "--passthrough", "--trace"},
	} {
		r := run(t, native, command{Argv: append(append([]string{txexecBin}, args...), "--", "true")})
		assert.Equal(t, 2, r.Status, "%v: %s", args, r.Stderr)
		assert.Regexp(t, `^txexec: .*--fast-lookups.*\n$`, r.Stderr, "%v", args)
	}
}
