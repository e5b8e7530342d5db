package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The fast path for read-only lookups in a transaction (--fast-lookups,
// docs/fastpath.md §4.5–4.7): the agent consults the tree's changed set and
// fast directories, records every call it makes natively, and the
// supervisor feeds the records into the read set. Each test compares a run
// with the option against one without it (or natively).

// runStats runs c in mode m with TXEXEC_STATS and returns what it printed
// and its statistics.
func runStats(t *testing.T, m mode, c command) (result, map[string]int) {
	t.Helper()
	stats := filepath.Join(t.TempDir(), "stats")
	c.Env = append(c.Env, "TXEXEC_STATS="+stats)
	r := run(t, m, c)
	b, err := os.ReadFile(stats)
	require.NoError(t, err, "stderr: %s", r.Stderr)
	values := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok, "line %q of %q", l, b)
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "line %q", l)
		values[k] = n
	}
	return r, values
}

// abortsAsWithout runs reads in a transaction held open in work, once
// without the option and once with it; while it waits, outside runs
// natively there. Each must abort (exit 75) without going on to write
// "out", with the same message; it returns the message of the run with the
// option. reset, if not nil, runs before each.
func abortsAsWithout(t *testing.T, work, reads, outside string, reset func()) string {
	t.Helper()
	var stderr [2]string
	for i, opts := range [][]string{noFastLookups, fastLookups} {
		if reset != nil {
			reset()
		}
		s := newTxState(t)
		h := s.startHeld(t, work, reads+"; echo ready; read x; echo done > out", opts...)
		h.ready(t)
		nativeRun(t, work, outside)
		r := h.finish(t)
		assert.Equal(t, 75, r.status, "%v: %s", opts, r.stderr)
		assert.NoFileExists(t, filepath.Join(work, "out"))
		stderr[i] = r.stderr
	}
	assert.Equal(t, stderr[0], stderr[1], reads)
	return stderr[1]
}

// TestFastLookupsTxLoop: 10,000 stats of a C loop in a transaction answer
// as natively, and all but a few run without the supervisor; without the
// option every one is served.
func TestFastLookupsTxLoop(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 10000
	c := command{Argv: []string{bin, "loop", strconv.Itoa(n), filepath.Join(dir, "file")}, Dir: dir}
	fastAsNative(t, c, n, n/10)
}

// TestFastLookupsTxRepeats: a process that stats one file 10,000 times
// publishes its record once (docs/fastpath.md §4.7): a repeat at the same
// generation tells the read set nothing; the stats still answer as
// natively.
func TestFastLookupsTxRepeats(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 10000
	c := command{Argv: []string{bin, "loop", strconv.Itoa(n), filepath.Join(dir, "file")}, Dir: dir, TxArgs: fastLookups}
	nat := run(t, native, c)
	r, stats := runStats(t, transaction, c)
	require.Equal(t, 0, r.Status, r.Stderr)
	assert.Equal(t, nat.Stdout, r.Stdout)
	assert.Less(t, stats["trapped_calls"], n/10, "the stats ran natively")
	assert.Less(t, stats["fast_records"], 100)
}

// fastAsNative runs c natively and in a transaction without and with the
// option: both print what the native run prints, at least n calls reach
// the supervisor without the option, and fewer than atMost with it.
func fastAsNative(t *testing.T, c command, n, atMost int) {
	t.Helper()
	nat := run(t, native, c)
	require.Equal(t, 0, nat.Status, nat.Stderr)
	slow, slowStats := runStats(t, transaction, withoutFast(c))
	c.TxArgs = fastLookups
	fast, fastStats := runStats(t, transaction, c)
	for _, r := range []result{slow, fast} {
		assert.Equal(t, 0, r.Status, r.Stderr)
		assert.Equal(t, nat.Stdout, r.Stdout)
	}
	assert.GreaterOrEqual(t, slowStats["trapped_calls"], n)
	assert.Less(t, fastStats["trapped_calls"], atMost)
	t.Logf("trapped calls: %d without the option, %d with it", slowStats["trapped_calls"], fastStats["trapped_calls"])
}

// TestFastLookupsTxOwnChanges: a path the transaction changed is answered
// from its view — the agent forwards it — while an unchanged one beside it
// is not: a stat after a write shows the new size, after an unlink ENOENT.
func TestFastLookupsTxOwnChanges(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 1000
	f, other := filepath.Join(dir, "file"), filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("other\n"), 0o644))
	script := fmt.Sprintf(`echo more >> %[2]s && %[1]s paths %[4]d %[2]s && %[1]s paths %[4]d %[3]s && rm %[2]s && %[1]s paths %[4]d %[2]s`,
		bin, f, other, n)
	c := command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: append([]string{"--on-exit=abort"}, fastLookups...)}
	r, stats := runStats(t, transaction, c)
	require.Equal(t, 0, r.Status, r.Stderr)
	assert.Equal(t, fmt.Sprintf("%s ret=0 errno=0 size=7 mode=100644\n%s ret=0 errno=0 size=6 mode=100644\n%s ret=-1 errno=2 size=0 mode=0\n",
		f, other, f), r.Stdout)
	// The changed file's 2n stats reach the supervisor through the
	// agent's forward page; the other's n do not.
	assert.GreaterOrEqual(t, stats["trapped_calls"], 2*n)
	assert.Less(t, stats["trapped_calls"], 2*n+n/2)
	assert.Equal(t, "x\n", readString(t, f), "aborted")
}

// TestFastLookupsTxSameResults: a program that reads and changes files
// prints the same and leaves the same host in a transaction with and
// without the option, committed and aborted.
func TestFastLookupsTxSameResults(t *testing.T) {
	dir, bin := fastFixture(t)
	w := filepath.Join(dir, "w")
	script := fmt.Sprintf(`%[1]s mix 20 %[2]s && mkdir -p %[3]s && echo a > %[3]s/f && %[1]s paths 50 %[3]s/f %[2]s/file %[3]s/g &&
rm %[3]s/f && echo bb > %[3]s/g && %[1]s paths 50 %[3]s/f %[3]s/g %[3]s && ls -l %[3]s | wc -l`, bin, dir, w)
	for _, opts := range [][]string{nil, {"--on-exit=abort"}} {
		t.Run(fmt.Sprint(opts), func(t *testing.T) {
			var got [2]result
			var host [2]string
			for i, fast := range []bool{false, true} {
				require.NoError(t, os.RemoveAll(w))
				c := withoutFast(command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: opts})
				if fast {
					c.TxArgs = append(append([]string(nil), opts...), fastLookups...)
				}
				got[i] = run(t, transaction, c)
				b, err := os.ReadFile(filepath.Join(w, "g"))
				host[i] = fmt.Sprintf("%q %v", b, err != nil)
			}
			assert.Equal(t, got[0], got[1])
			assert.Equal(t, host[0], host[1])
			assert.Equal(t, 0, got[1].Status, got[1].Stderr)
		})
	}
}

// TestFastLookupsTxHostChange: a host change by a process txexec does not
// supervise, between a lookup the agent made natively and the commit,
// aborts the transaction exactly as without the option. The program stats
// each path 50 times from one call site: all but the very first stat run
// natively (checked by the count of calls served).
func TestFastLookupsTxHostChange(t *testing.T) {
	dir, bin := fastFixture(t)
	tests := []hostChange{
		{"chmod", "chmod 0600 b", "b", "its mode or owner was changed by another process after it was read"},
		{"removed", "rm b", "b", "removed by another process after it was read"},
		{"created", "echo surprise > missing", "missing", "created by another process after the transaction found it absent"},
		{"created directory", "mkdir gone", "gone", "created by another process after the transaction found it absent"},
		{"created directory, looked up as dir/.", "mkdir dot", "dot", "created by another process after the transaction found it absent"},
		{"created directory, looked up as dir/", "mkdir slash", "slash", "created by another process after the transaction found it absent"},
	}
	work := t.TempDir()
	reads := fmt.Sprintf("%s paths 50 %s %s %s %s %s %s > /dev/null", bin, filepath.Join(dir, "file"),
		filepath.Join(work, "b"), filepath.Join(work, "missing"), filepath.Join(work, "gone", "x"),
		filepath.Join(work, "dot")+"/.", filepath.Join(work, "slash")+"/")
	reset := func() {
		require.NoError(t, os.RemoveAll(filepath.Join(work, "b")))
		require.NoError(t, os.WriteFile(filepath.Join(work, "b"), []byte("b\n"), 0o644))
		for _, name := range []string{"missing", "gone", "dot", "slash"} {
			require.NoError(t, os.RemoveAll(filepath.Join(work, name)))
		}
	}
	hostChangeCases(t, work, reads, reset, 100, tests)
}

// hostChange is a change another process makes to what a transaction
// read (outside, a shell command in the work directory), and the conflict
// it aborts the transaction with: on path, for why.
type hostChange struct {
	name, outside, path, why string
}

// hostChangeCases checks that reads (a shell command in work, from the
// state reset makes) run more than fewer of their calls natively with the
// option than without, and that each change in tests, made while the
// transaction waits, aborts it as without the option, with its conflict.
func hostChangeCases(t *testing.T, work, reads string, reset func(), fewer int, tests []hostChange) {
	t.Helper()
	reset()
	c := command{Argv: []string{"sh", "-c", reads}, Dir: work}
	_, slow := runStats(t, transaction, withoutFast(c))
	c.TxArgs = fastLookups
	_, fast := runStats(t, transaction, c)
	require.Greater(t, slow["trapped_calls"]-fast["trapped_calls"], fewer, "the stats ran natively")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := abortsAsWithout(t, work, reads, tt.outside, reset)
			assert.Equal(t, fmt.Sprintf("txexec: transaction 1 aborted: conflict on %s (%s)\n", filepath.Join(work, tt.path), tt.why), got)
		})
	}
}

// TestFastLookupsTxDirPaths: paths that name a directory, with "/." or a
// trailing slash, answer as natively in a transaction: those of a missing
// directory without the supervisor (ENOENT), those of a file (ENOTDIR) or
// of a symlink to a directory (followed) through it.
func TestFastLookupsTxDirPaths(t *testing.T) {
	dir, bin := fastFixture(t)
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "dlink")))
	const n = 50
	argv := []string{bin, "paths", strconv.Itoa(n)}
	for _, p := range []string{"missing/.", "missing/", "missing/a/.", "sub/.", "sub/", "sub/../sub/.", "file/.", "file/", "dlink/.", "dlink/", "sub/../file/"} {
		argv = append(argv, dir+"/"+p) // not filepath.Join, which cleans
	}
	c := command{Argv: argv, Dir: dir}
	// 11 paths: the 5 of a file or a symlink forwarded.
	fastAsNative(t, c, 11*n, 5*n+n)
}

// TestFastLookupsTxFork: a forked child maps a ring of its own, not its
// parent's (docs/fastpath.md §4.4), and both take the fast path.
func TestFastLookupsTxFork(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 5000
	c := command{Argv: []string{bin, "fork", strconv.Itoa(n), filepath.Join(dir, "file")}, Dir: dir, TxArgs: fastLookups}
	r, stats := runStats(t, transaction, c)
	require.Equal(t, 0, r.Status, r.Stderr)
	assert.Less(t, stats["trapped_calls"], n/5)
	var child, parent uint64
	for _, l := range strings.Split(r.Stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "child ring="); ok {
			child, _ = strconv.ParseUint(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(l, "parent ring="); ok {
			parent, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	assert.NotZero(t, child, r.Stdout)
	assert.NotZero(t, parent, r.Stdout)
	assert.NotEqual(t, child, parent, "the child must not write its parent's ring")
}

// TestFastLookupsTxTreeReadOnly: a program cannot write the tree's sets —
// not by making its mapping writable, nor through a writable mapping of
// the memfd or write(2) (/proc/self/map_files, root only) — as root and
// as an ordinary user (docs/fastpath.md §4.8).
func TestFastLookupsTxTreeReadOnly(t *testing.T) {
	_, bin := fastFixture(t)
	for _, prefix := range [][]string{nil, unprivileged} {
		c := command{Argv: append(append([]string(nil), prefix...), bin, "treewrite", "0", "-"), TxArgs: fastLookups}
		r := run(t, transaction, c)
		require.Equal(t, 0, r.Status, "%v: %s%s", prefix, r.Stdout, r.Stderr)
		assert.Contains(t, r.Stdout, "mprotect ret=-1 errno=13\n", prefix)
		assert.NotContains(t, r.Stdout, "mmap shared writable ok=1", prefix)
		assert.NotContains(t, r.Stdout, "write ok=1", prefix)
	}
}

// TestFastLookupsInProgram: under --passthrough, a thread that begins a
// transaction of its own (xbegin) sees its own change to a file whose
// stats the agent made natively before: its process's agent forwards every
// lookup from then on (without that, the agent answered from the host).
func TestFastLookupsInProgram(t *testing.T) {
	dir, bin := fastFixture(t)
	f := filepath.Join(dir, "file") // "x\n"
	const n = 1000
	r := run(t, passthrough, command{Argv: []string{bin, "xbegin", strconv.Itoa(n), f}, Dir: dir, TxArgs: fastLookups})
	lines := strings.Split(r.Stdout, "\n")
	require.Len(t, lines, 4, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	assert.Contains(t, lines[0], " size=2 ")
	assert.Equal(t, "xbegin ret=0", lines[1])
	assert.Contains(t, lines[2], " size=7 ", "the transaction's own append")
	assert.Equal(t, "x\n", readString(t, f), "aborted")
}

// TestFastLookupsTxOpens: read-only opens by path, lookups of a name
// relative to a directory descriptor and of a descriptor itself, paths
// with "." and "..", and paths through a directory that does not exist run
// natively in a transaction: of 5,000 open+read+close of a file, of 3,000
// rounds of openat(dirfd, "file"), fstatat(dirfd, "file") and
// fstatat(fd, "", AT_EMPTY_PATH), of 5,000 fstats, and of 3,000 stats of
// each such path, few reach the supervisor; every run prints what the
// native one does.
func TestFastLookupsTxOpens(t *testing.T) {
	dir, bin := fastFixture(t)
	for _, tt := range []struct {
		argv      []string
		n, atMost int
	}{
		{[]string{bin, "openloop", "5000", filepath.Join(dir, "file")}, 5000, 500},
		{[]string{bin, "dirread", "5000", dir, "file"}, 5000, 500},
		{[]string{bin, "dirloop", "3000", dir}, 3 * 3000, 300},
		{[]string{bin, "fstatloop", "5000", filepath.Join(dir, "file")}, 5000, 500},
		// Not filepath.Join, which would clean them.
		{[]string{bin, "paths", "3000", dir + "/sub/../file", dir + "/sub/./../sub/.", dir + "/nothere/x",
			dir + "/sub/../nothere/x"}, 4 * 3000, 1200},
	} {
		t.Run(tt.argv[1], func(t *testing.T) {
			fastAsNative(t, command{Argv: tt.argv, Dir: dir}, tt.n, tt.atMost)
		})
	}
}

// TestFastLookupsTxOpenMix: every open flavour (read-only, O_NOFOLLOW,
// O_DIRECTORY, O_PATH with and without O_NOFOLLOW) of a file, a symlink,
// a dangling one, a "..", a directory, a relative path, /proc and "/", the
// same relative to descriptors, and descriptors the agent opened then used
// in calls the supervisor serves (fchdir, getdents64): a transaction with
// the option prints what one without it prints, committed and aborted.
func TestFastLookupsTxOpenMix(t *testing.T) {
	dir, bin := fastFixture(t)
	for _, opts := range [][]string{nil, {"--on-exit=abort"}} {
		c := command{Argv: []string{bin, "openmix", "20", dir}, Dir: dir, TxArgs: opts}
		slow := run(t, transaction, withoutFast(c))
		c.TxArgs = append(append([]string(nil), opts...), fastLookups...)
		fast := run(t, transaction, c)
		assert.Equal(t, 0, fast.Status, fast.Stderr)
		assert.Equal(t, slow, fast, "%v", opts)
	}
}

// TestFastLookupsTxAtime: reading files the agent opened, by path and
// relative to a descriptor, leaves their atimes as the view's own reads
// do: the tree's mounts update none. Natively the same reads do update
// it (relatime: the atime is older than a day), so the check can fail.
func TestFastLookupsTxAtime(t *testing.T) {
	dir, bin := fastFixture(t)
	f := filepath.Join(dir, "file")
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	atime := func() time.Time {
		var st unix.Stat_t
		require.NoError(t, unix.Stat(f, &st))
		return time.Unix(st.Atim.Unix())
	}
	for _, argv := range [][]string{{bin, "openloop", "200", f}, {bin, "dirread", "200", dir, "file"}} {
		require.NoError(t, os.Chtimes(f, old, time.Time{}))
		c := command{Argv: argv, Dir: dir, TxArgs: fastLookups}
		_, stats := runStats(t, transaction, c)
		assert.Less(t, stats["trapped_calls"], 100, "%v: the opens ran natively", argv[1])
		assert.True(t, atime().Equal(old), "%v: atime %v", argv[1], atime())
	}
	nativeRun(t, dir, bin+" openloop 1 "+f+" > /dev/null")
	assert.False(t, atime().Equal(old), "a native read updates the atime")
}

// TestFastLookupsTxOldStat: the old stat and lstat system calls (glibc's
// __xstat and __lxstat, which GNU make calls) take the fast path as
// newfstatat does, and answer as natively.
func TestFastLookupsTxOldStat(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 2000
	c := command{Argv: []string{bin, "xstatloop", strconv.Itoa(n), filepath.Join(dir, "file")}, Dir: dir}
	fastAsNative(t, c, 2*n, n/10)
	c.Argv[3] = filepath.Join(dir, "missing")
	fastAsNative(t, c, 2*n, n/10)
}

// TestFastLookupsTxReadlink: a symlink's target is read natively in a
// transaction, as natively, without updating its atime; one replaced by
// another process after the transaction read it aborts the transaction as
// without the option.
func TestFastLookupsTxReadlink(t *testing.T) {
	dir, bin := fastFixture(t)
	link := filepath.Join(dir, "link")
	const n = 2000
	c := command{Argv: []string{bin, "readlinkloop", strconv.Itoa(n), link}, Dir: dir}
	fastAsNative(t, c, n, n/10)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := []unix.Timespec{unix.NsecToTimespec(old.UnixNano()), {Nsec: unix.UTIME_OMIT}}
	require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, link, ts, unix.AT_SYMLINK_NOFOLLOW))
	c.TxArgs = fastLookups
	r := run(t, transaction, c)
	require.Equal(t, 0, r.Status, r.Stderr)
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(link, &st))
	assert.Equal(t, old.Unix(), st.Atim.Sec, "the symlink's atime")

	work := t.TempDir()
	reset := func() { nativeRun(t, work, "ln -sfn a l") }
	got := abortsAsWithout(t, work, bin+" readlinkloop 50 l > /dev/null", "ln -sfn b l", reset)
	assert.Contains(t, got, "conflict on "+filepath.Join(work, "l"))
}

// linkFixture adds symlinks to a fast-lookup fixture: to a directory
// (relative and absolute), to a file (through another symlink, and
// absolute), dangling ones, a loop, one to a symlink whose target goes
// through a third; and returns the paths linkmix looks
// up through them.
func linkFixture(t *testing.T, dir string) []string {
	t.Helper()
	writeFiles(t, dir, map[string]string{"sub/inner": "i\n"})
	for name, to := range map[string]string{
		"dlink": "sub", "alink": filepath.Join(dir, "sub"), "chain": "link", "aflink": filepath.Join(dir, "file"),
		"loop1": "loop2", "loop2": "loop1", "dlink2": "nodir", "slink": "sub/../sub/inner",
		"vlink": "dlink/inner", "olink": "vlink",
	} {
		require.NoError(t, os.Symlink(to, filepath.Join(dir, name)))
	}
	var paths []string
	for _, p := range []string{"dlink/inner", "alink/inner", "dlink/../file", "dlink", "chain", "aflink", "link",
		"dangling", "loop1", "dlink2/x", "dlink/missing", "dlink/inner/", "alink/../sub/inner", "slink", "dlink/./inner", "olink"} {
		paths = append(paths, dir+"/"+p) // not filepath.Join, which cleans
	}
	return paths
}

// TestFastLookupsTxLinks: every kind of lookup through symlinks the view
// followed — in the middle of a path and at its end, relative and
// absolute targets, chains, dangling, loops, ".." after one — answers as
// natively, and the agent makes most of them itself (docs/fastpath.md
// §4.5).
func TestFastLookupsTxLinks(t *testing.T) {
	dir, bin := fastFixture(t)
	paths := linkFixture(t, dir)
	const n = 40
	c := command{Argv: append([]string{bin, "linkmix", strconv.Itoa(n)}, paths...), Dir: dir}
	// Forwarded: what fails through a symlink (a loop, a missing
	// directory, ENOTDIR), and what opens a symlink itself with
	// O_NOFOLLOW or a file with O_DIRECTORY (a quarter of the calls);
	// without symlinks followed, 70%.
	calls := n * len(paths) * 11
	fastAsNative(t, c, calls, calls/3)
}

// TestFastLookupsTxLinksSeeChanges: a transaction that changes a symlink,
// or a file under its target, sees its change through the symlink, as
// without the option.
func TestFastLookupsTxLinksSeeChanges(t *testing.T) {
	dir, bin := fastFixture(t)
	linkFixture(t, dir)
	writeFiles(t, dir, map[string]string{"other/inner": "o\n"})
	script := fmt.Sprintf(`%[1]s linkmix 20 %[2]s/dlink/inner %[2]s/chain > /dev/null &&
		ln -sfn other %[2]s/dlink && echo changed > %[2]s/file &&
		%[1]s linkmix 20 %[2]s/dlink/inner %[2]s/chain %[2]s/aflink && cat %[2]s/dlink/inner %[2]s/chain`, bin, dir)
	// The file the transaction wrote has a new inode at every run.
	inode := regexp.MustCompile(`v=[0-9]+`)
	var outs [2]string
	for i, opts := range [][]string{noFastLookups, fastLookups} {
		c := command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: append([]string{"--on-exit=abort"}, opts...)}
		r := run(t, transaction, c)
		require.Equal(t, 0, r.Status, r.Stderr)
		outs[i] = inode.ReplaceAllString(r.Stdout, "v=?")
	}
	assert.Equal(t, outs[0], outs[1])
	assert.Contains(t, outs[1], "o\nchanged\n")
	target, err := os.Readlink(filepath.Join(dir, "dlink"))
	require.NoError(t, err)
	assert.Equal(t, "sub", target, "aborted")
}

// TestFastLookupsTxLinksHostChange: a symlink the transaction read
// through, or a file under its target, changed by another process while
// the transaction runs, aborts it as without the option.
func TestFastLookupsTxLinksHostChange(t *testing.T) {
	_, bin := fastFixture(t)
	work := t.TempDir()
	reset := func() {
		nativeRun(t, work, "rm -rf a b l f && mkdir a b && echo a > a/f && echo b > b/f && ln -s a l && ln -s l/f f")
	}
	reads := fmt.Sprintf("%[1]s linkmix 30 %[2]s/l/f %[2]s/f > /dev/null", bin, work)
	got := abortsAsWithout(t, work, reads, "ln -sfn b l", reset)
	assert.Contains(t, got, "conflict on ")
	abortsAsWithout(t, work, reads, "echo c > a/f", reset)
	abortsAsWithout(t, work, reads, "echo d > a/g && mv a/g a/f", reset)
}

// TestFastLookupsTxReadlinkChangedDir: readlink of a directory the
// transaction made an entry in answers EINVAL natively (its type is all it
// reads), while its stat, whose times the view answers, is still served.
func TestFastLookupsTxReadlinkChangedDir(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 2000
	sub := filepath.Join(dir, "sub")
	script := fmt.Sprintf(`touch %[2]s/new$$ && %[1]s readlinkloop %[3]d %[2]s && %[1]s paths 1 %[2]s | sed 's/ mode=.*//'`, bin, sub, n)
	c := command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: []string{"--on-exit=abort"}}
	nat := run(t, native, c)
	require.Equal(t, 0, nat.Status, nat.Stderr)
	slow, slowStats := runStats(t, transaction, withoutFast(c))
	c.TxArgs = append(c.TxArgs, fastLookups...)
	fast, fastStats := runStats(t, transaction, c)
	for _, r := range []result{slow, fast} {
		require.Equal(t, 0, r.Status, r.Stderr)
		assert.Equal(t, nat.Stdout, r.Stdout)
	}
	assert.GreaterOrEqual(t, slowStats["trapped_calls"], n)
	assert.Less(t, fastStats["trapped_calls"], n/10)
}

// TestFastLookupsTxOpensSeeChanges: a file the transaction wrote is read,
// by path and relative to a descriptor of its directory, with the
// transaction's content (the agent forwards it), and an unchanged one
// beside it natively.
func TestFastLookupsTxOpensSeeChanges(t *testing.T) {
	dir, bin := fastFixture(t)
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("o\n"), 0o644))
	script := fmt.Sprintf(`echo y > file && %[1]s openloop 300 %[2]s/file && %[1]s dirread 300 %[2]s file && %[1]s dirread 300 %[2]s other`,
		bin, dir)
	c := command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: append([]string{"--on-exit=abort"}, fastLookups...)}
	r, stats := runStats(t, transaction, c)
	require.Equal(t, 0, r.Status, r.Stderr)
	assert.Equal(t, fmt.Sprintf("open %s/file sum=%d\ndirread file sum=%d\ndirread other sum=%d\n", dir, 300*'y', 300*'y', 300*'o'), r.Stdout)
	// The changed file's 600 opens reach the supervisor; the other's do not.
	assert.GreaterOrEqual(t, stats["trapped_calls"], 600)
	assert.Less(t, stats["trapped_calls"], 800)
	assert.Equal(t, "x\n", readString(t, filepath.Join(dir, "file")), "aborted")
}

// TestFastLookupsTxOpenHostChange: a host change by a process txexec does
// not supervise, to a file the transaction read through an open the agent
// made (by path or relative to a descriptor), aborts the transaction as
// without the option. Each program opens another file first from the same
// call site, so that every open of b is the agent's (the site's first call
// is served).
func TestFastLookupsTxOpenHostChange(t *testing.T) {
	_, bin := fastFixture(t)
	work := t.TempDir()
	a, b := filepath.Join(work, "a"), filepath.Join(work, "b")
	for _, reads := range []string{
		fmt.Sprintf("%s openloop 50 %s %s > /dev/null", bin, a, b),
		fmt.Sprintf("%s dirread 50 %s a b > /dev/null", bin, work),
	} {
		reset := func() {
			require.NoError(t, os.WriteFile(a, []byte("a\n"), 0o644))
			require.NoError(t, os.WriteFile(b, []byte("b\n"), 0o644))
		}
		assert.Contains(t, abortsAsWithout(t, work, reads, "echo changed > b", reset), "conflict on "+b, reads)
	}
}

// TestFastLookupsTxOwnObjects: a descriptor of an object the transaction
// staged (a file it wrote) shows the staged object, whose fstat the agent
// answers itself as the view would (TestFastLookupsTxOwnFstat has the
// cases it forwards), and a path through a directory that did not exist
// is found once the transaction made it: each run prints what it prints
// without the option.
func TestFastLookupsTxOwnObjects(t *testing.T) {
	dir, bin := fastFixture(t)
	script := fmt.Sprintf(`%[1]s fstatloop 200 %[2]s/file && echo more >> %[2]s/file && %[1]s fstatloop 200 %[2]s/file &&
%[1]s paths 100 %[2]s/new/x %[2]s/sub/../new/x && mkdir %[2]s/new && echo x > %[2]s/new/x && %[1]s paths 100 %[2]s/new/x %[2]s/sub/../new/x`, bin, dir)
	var got [2]result
	var stats [2]map[string]int
	for i, opts := range [][]string{{"--on-exit=abort", "--no-fast-lookups"}, append([]string{"--on-exit=abort"}, fastLookups...)} {
		got[i], stats[i] = runStats(t, transaction, command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: opts})
		require.Equal(t, 0, got[i].Status, got[i].Stderr)
	}
	assert.Equal(t, got[0].Stdout, got[1].Stdout)
	assert.Contains(t, got[1].Stdout, "fstat "+dir+"/file size=7 nlink=1 same=1\n")
	assert.Contains(t, got[1].Stdout, dir+"/sub/../new/x ret=0 errno=0 size=2 mode=100644\n")
	// The 200 stats of new/x after it was made are served; the unchanged
	// file's, the absent ones' and the staged file's fstats not.
	assert.GreaterOrEqual(t, stats[1]["trapped_calls.newfstatat"], 200)
	assert.Less(t, stats[1]["trapped_calls.newfstatat"], 300)
	assert.NoDirExists(t, filepath.Join(dir, "new"), "aborted")
}

// TestFastLookupsTxOwnFstat: the fstat of a descriptor of a file the
// transaction created or staged is answered by the agent (fewer than a
// tenth of the calls at the supervisor) after writes, truncates by
// descriptor and by path, chmod, chown and utimensat, and through a
// descriptor open for reading (the agent's other way), with every field
// the view's (the fixture compares each fstat with a statx, which the
// supervisor serves) and the output of a run without the option; after a
// link, a rename, an unlink or a chown that changes only the ctime, which
// set the view's answer apart from the file's own, the fstats are served.
func TestFastLookupsTxOwnFstat(t *testing.T) {
	dir, bin := fastFixture(t)
	const n = 2000
	for _, tt := range []struct {
		path   string
		steps  []string
		native bool
	}{
		{"new", []string{"create", "write", "ftruncate", "truncate", "fchmod", "fchown", "futimens", "reopen"}, true},
		{"file", []string{"stage", "write", "fchmod", "futimens"}, true},
		{"new", []string{"create", "link"}, false},
		{"new", []string{"create", "rename"}, false},
		{"new", []string{"create", "unlink"}, false},
		{"new", []string{"create", "touchctime"}, false},
	} {
		t.Run(strings.Join(tt.steps, "-"), func(t *testing.T) {
			argv := append([]string{bin, "ownfstat", strconv.Itoa(n), filepath.Join(dir, tt.path)}, tt.steps...)
			var got [2]result
			var stats [2]map[string]int
			for i, opts := range [][]string{{"--on-exit=abort", "--no-fast-lookups"}, append([]string{"--on-exit=abort"}, fastLookups...)} {
				got[i], stats[i] = runStats(t, transaction, command{Argv: argv, Dir: dir, TxArgs: opts})
				require.Equal(t, 0, got[i].Status, got[i].Stderr)
			}
			assert.Equal(t, got[0].Stdout, got[1].Stdout)
			assert.Equal(t, len(tt.steps), strings.Count(got[1].Stdout, " same=1\n"), got[1].Stdout)
			all := len(tt.steps) * n
			assert.GreaterOrEqual(t, stats[0]["trapped_calls.newfstatat"], all)
			if tt.native {
				assert.Less(t, stats[1]["trapped_calls.newfstatat"], all/10)
			} else {
				// The create's are the agent's, the last step's served.
				assert.GreaterOrEqual(t, stats[1]["trapped_calls.newfstatat"], n)
				assert.Less(t, stats[1]["trapped_calls.newfstatat"], n+n/10)
			}
		})
	}
	assert.Equal(t, "x\n", readString(t, filepath.Join(dir, "file")), "aborted")
	assert.NoFileExists(t, filepath.Join(dir, "new"))
}

// TestFastLookupsTxOutputFile: the command's output is a host file txexec
// inherited, written straight through (outside the transaction); a fstat
// of it that the agent makes natively (cat and cp make one of their
// output) reads nothing the transaction must validate, so the writes
// after it do not abort the transaction, as without the option.
func TestFastLookupsTxOutputFile(t *testing.T) {
	dir, _ := fastFixture(t)
	for _, opts := range []string{"", "--fast-lookups"} {
		out := filepath.Join(t.TempDir(), "out")
		nativeRun(t, dir, fmt.Sprintf(`%s %s -- sh -c 'for i in 1 2 3 4 5; do cat file; done; echo done' > %s 2>&1`, txexecBin, opts, out))
		assert.Equal(t, "x\nx\nx\nx\nx\ndone\n", readString(t, out), opts)
	}
}

// TestFastLookupsTxRemovedDirectory: a descriptor of a host directory the
// transaction removed and then changed through the descriptor is looked up
// by the view (the agent forwards the fstat: its path changed), as without
// the option.
func TestFastLookupsTxRemovedDirectory(t *testing.T) {
	requireTools(t, "python3")
	dir, _ := fastFixture(t)
	script := `import os
d = os.open("sub", os.O_RDONLY)
for _ in range(50): os.stat(d)
os.rmdir("sub")
os.fchmod(d, 0o700)
os.utime(d, (5, 6))
st = os.stat(d)
print(oct(st.st_mode & 0o777), st.st_mtime, st.st_nlink)`
	var got [2]result
	for i, opts := range [][]string{{"--on-exit=abort", "--no-fast-lookups"}, append([]string{"--on-exit=abort"}, fastLookups...)} {
		got[i] = run(t, transaction, command{Argv: []string{"python3", "-c", script}, Dir: dir, TxArgs: opts})
		require.Equal(t, 0, got[i].Status, got[i].Stderr)
	}
	assert.Equal(t, "0o700 6.0 0\n", got[1].Stdout)
	assert.Equal(t, got[0].Stdout, got[1].Stdout)
}

// TestFastLookupsTxDataReadChmod: a transaction that only read a file's
// data (cat, whose fstat of the file the agent makes) commits over a chmod
// and a chown by another process, as without the option: the fstat of an
// open descriptor reads the data, not the attributes.
func TestFastLookupsTxDataReadChmod(t *testing.T) {
	for _, other := range []string{"chmod 0600 f", "chown 1:1 f"} {
		for _, opts := range [][]string{noFastLookups, fastLookups} {
			s := newTxState(t)
			work := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(work, "f"), []byte("file\n"), 0o644))
			require.NoError(t, os.Chtimes(filepath.Join(work, "f"), time.Unix(1e9, 0), time.Unix(1e9, 0)))
			h := s.startHeld(t, work, "cat f f f > /dev/null; echo ready; read x; echo done > out", opts...)
			h.ready(t)
			nativeRun(t, work, other)
			r := h.finish(t)
			assert.Equal(t, 0, r.status, "%s %v: %s", other, opts, r.stderr)
			assert.FileExists(t, filepath.Join(work, "out"))
		}
	}
}
