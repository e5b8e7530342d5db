package e2e

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// determFixture makes dir afresh, with hostdir/ holding files created in
// a random order (so that the host lists them in no fixed order).
func determFixture(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "hostdir"), 0o755))
	names := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "hostdir", n), []byte(n), 0o644))
	}
}

// timedTree is snapshotTree with the modification times of everything the
// run made: every entry below dir but hostdir/, the fixture's.
func timedTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch rel {
		case ".":
			return nil
		case "hostdir":
			return filepath.SkipDir // the fixture's, made afresh each time
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%v %s mtime=%d.%09d", info.Mode(), rel, st.Mtim.Sec, st.Mtim.Nsec)
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" sha256=%x", sha256.Sum256(b))
		}
		out = append(out, line)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// TestDeterministicRunsRepeat: a C program and a Python script that print
// the time, random numbers, mkstemp and tempfile names, uuid4(), their
// pids, listings of a directory made in random order and of a host one,
// and date(1), and write files with those values and their mtimes, give
// byte-identical stdout and committed trees over three runs with the same
// seed, and different ones with another seed.
func TestDeterministicRunsRepeat(t *testing.T) {
	testenv.NeedRoot(t, "--deterministic makes a pid namespace")
	requireTools(t, "python3", "date")
	bin := buildC(t, t.TempDir(), "determ", "determ")
	script, err := filepath.Abs("testdata/determ.py")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "work")
	state := t.TempDir()
	runSeed := func(seed string) (string, []string) {
		determFixture(t, dir)
		r := run(t, transaction, command{
			Argv:   []string{"sh", "-c", `"$1" "$3" && python3 "$2" "$3"`, "sh", bin, script, dir},
			Env:    []string{"TXEXEC_STATE_DIR=" + state},
			TxArgs: []string{"--deterministic=" + seed},
		})
		require.Equal(t, 0, r.Status, "stderr:\n%s", r.Stderr)
		return r.Stdout, timedTree(t, dir)
	}
	out1, tree1 := runSeed("7")
	t.Logf("first run:\n%s", out1)
	for _, want := range []string{
		"date Sat Jan  1 00:00:00 UTC 2000", "pid 101 ppid 100", "hostname txexec nprocs 4", "vDSO hidden", ": consistent\n",
		"listing hostdir: . .. alpha bravo charlie delta echo foxtrot golf hotel",
		"listdir hostdir ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel']",
	} {
		assert.Contains(t, out1, want)
	}
	assert.Contains(t, tree1, "-rw-r--r-- c-values.txt mtime=946684800.270000000 sha256="+sha256Of(t, filepath.Join(dir, "c-values.txt")),
		"the C program's output file has the time of the virtual clock at its last write")
	for i := 2; i <= 3; i++ {
		out, tree := runSeed("7")
		assert.Equal(t, out1, out, "stdout of run %d with the same seed", i)
		assert.Equal(t, tree1, tree, "committed tree of run %d with the same seed", i)
	}
	out8, tree8 := runSeed("8")
	assert.NotEqual(t, out1, out8, "stdout with another seed")
	assert.NotEqual(t, tree1, tree8, "committed tree with another seed")
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// recordedRun is the recording id in the stderr of a --record run.
var recordedRun = regexp.MustCompile(`txexec: recorded run (\d+) \(transaction \d+\)`)

func recordingID(t *testing.T, stderr string) string {
	t.Helper()
	m := recordedRun.FindStringSubmatch(stderr)
	require.NotNil(t, m, "no recording in:\n%s", stderr)
	return m[1]
}

// TestRecordReplay: a recorded run, replayed after the host changed what
// it read, repeats its outcome (it reads the recorded in.txt) and changes
// nothing on the host; a live run now differs. replay --diff shows what
// differs in a run that read something live (/proc, which replays bind).
func TestRecordReplay(t *testing.T) {
	testenv.NeedRoot(t, "--deterministic makes a pid namespace, replay a mount namespace")
	requireTools(t, "sh", "cat", "sort", "date")
	dir, state := t.TempDir(), t.TempDir()
	env := []string{"TXEXEC_STATE_DIR=" + state}
	writeFiles(t, dir, map[string]string{"in.txt": "pear\napple\nfig\n"})
	script := []string{"sh", "-c", "cat in.txt | sort > out.txt; date"}
	rec := run(t, transaction, command{Argv: script, Dir: dir, Env: env, TxArgs: []string{"--record"}})
	require.Equal(t, 0, rec.Status, rec.Stderr)
	assert.Equal(t, "Sat Jan  1 00:00:00 UTC 2000\n", rec.Stdout)
	id := recordingID(t, rec.Stderr)
	recorded, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err, "the recorded run commits as usual")
	assert.Equal(t, "apple\nfig\npear\n", string(recorded))

	writeFiles(t, dir, map[string]string{"in.txt": "zebra\nyak\n"})
	require.NoError(t, os.Remove(filepath.Join(dir, "out.txt")))
	before := snapshotTree(t, dir, nil)
	rep := run(t, native, command{Argv: []string{txexecBin, "replay", id}, Dir: t.TempDir(), Env: env})
	assert.Equal(t, 0, rep.Status, "stdout:\n%s\nstderr:\n%s", rep.Stdout, rep.Stderr)
	assert.Equal(t, "replay of recording "+id+": identical: exit status 0, stdout, stderr and 2 changes\n", rep.Stdout)
	assert.Equal(t, before, snapshotTree(t, dir, nil), "a replay changes nothing on the host")

	live := run(t, transaction, command{Argv: script, Dir: dir, Env: env, TxArgs: []string{"--deterministic"}})
	require.Equal(t, 0, live.Status, live.Stderr)
	now, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.NotEqual(t, string(recorded), string(now), "a live run reads the new in.txt")

	t.Run("diff", func(t *testing.T) {
		rec := run(t, transaction, command{Argv: []string{"cat", "/proc/uptime"}, Dir: dir, Env: env, TxArgs: []string{"--record"}})
		require.Equal(t, 0, rec.Status, rec.Stderr)
		id := recordingID(t, rec.Stderr)
		rep := run(t, native, command{Argv: []string{txexecBin, "replay", id, "--diff"}, Env: env})
		assert.Equal(t, 1, rep.Status, rep.Stderr)
		assert.Contains(t, rep.Stdout, "replay of recording "+id+": differs in stdout\n--- recorded stdout\n+++ replayed stdout\n@@ -1 +1 @@\n-"+rec.Stdout)
	})
	t.Run("unknown", func(t *testing.T) {
		rep := run(t, native, command{Argv: []string{txexecBin, "replay", "999"}, Env: env})
		assert.Equal(t, 1, rep.Status)
		assert.Equal(t, "txexec: no recording 999\n", rep.Stderr)
	})
}

// TestExportReplayElsewhere: an exported recording replays identically
// from another directory, with another state directory; a file that is
// not one is refused.
func TestExportReplayElsewhere(t *testing.T) {
	testenv.NeedRoot(t, "--deterministic makes a pid namespace, replay a mount namespace")
	requireTools(t, "sh", "cat", "sort", "date")
	dir, state := t.TempDir(), t.TempDir()
	env := []string{"TXEXEC_STATE_DIR=" + state}
	writeFiles(t, dir, map[string]string{"in.txt": "3\n1\n2\n", "sub/x": "x"})
	rec := run(t, transaction, command{Argv: []string{"sh", "-c", "cat in.txt | sort > out.txt; ls; date; head -c 8 /dev/urandom | od -An -tx1"},
		Dir: dir, Env: env, TxArgs: []string{"--record=" /* no value */}})
	require.Equal(t, 2, rec.Status, "--record takes no value")
	rec = run(t, transaction, command{Argv: []string{"sh", "-c", "cat in.txt | sort > out.txt; ls; date; head -c 8 /dev/urandom | od -An -tx1"},
		Dir: dir, Env: env, TxArgs: []string{"--record", "--deterministic=42"}})
	require.Equal(t, 0, rec.Status, rec.Stderr)
	id := recordingID(t, rec.Stderr)
	file := filepath.Join(t.TempDir(), "rec.tar")
	exp := run(t, native, command{Argv: []string{txexecBin, "export", id, "-o", file}, Env: env})
	require.Equal(t, 0, exp.Status, exp.Stderr)
	require.NoError(t, os.RemoveAll(dir), "the recorded tree is gone")

	elsewhere := []string{"TXEXEC_STATE_DIR=" + t.TempDir()}
	rep := run(t, native, command{Argv: []string{txexecBin, "replay", file}, Dir: t.TempDir(), Env: elsewhere})
	assert.Equal(t, 0, rep.Status, "stdout:\n%s\nstderr:\n%s", rep.Stdout, rep.Stderr)
	assert.Equal(t, "replay of "+file+": identical: exit status 0, stdout, stderr and 2 changes\n", rep.Stdout)

	bogus := filepath.Join(t.TempDir(), "bogus")
	require.NoError(t, os.WriteFile(bogus, []byte("not a recording"), 0o644))
	rep = run(t, native, command{Argv: []string{txexecBin, "replay", bogus}, Env: elsewhere})
	assert.Equal(t, exitInternalStatus, rep.Status)
	assert.Equal(t, "txexec: "+bogus+": not an exported txexec recording\n", rep.Stderr)
}

// exitInternalStatus is txexec's exit status for an internal error.
const exitInternalStatus = 70

// TestRepeat: --repeat reports agreement for a deterministic command and
// commits nothing; --vary-seed makes runs that read randomness differ.
func TestRepeat(t *testing.T) {
	testenv.NeedRoot(t, "--deterministic makes a pid namespace")
	requireTools(t, "sh", "od", "head", "date")
	dir := t.TempDir()
	script := []string{"sh", "-c", "date; head -c 4 /dev/urandom | od -An -tx1; echo $$ > made"}
	r := run(t, transaction, command{Argv: script, Dir: dir, TxArgs: []string{"--deterministic=9", "--repeat", "3"}})
	assert.Equal(t, 0, r.Status, r.Stderr)
	assert.Equal(t, "txexec: the 3 runs agree: exit status 0, stdout, stderr and 2 changes\n", r.Stderr)
	assert.Equal(t, 2, strings.Count(r.Stdout, "\n"), "the first run's output only:\n%s", r.Stdout)
	assert.NoFileExists(t, filepath.Join(dir, "made"), "--repeat commits nothing")

	r = run(t, transaction, command{Argv: script, Dir: dir, TxArgs: []string{"--deterministic=9", "--repeat", "2", "--vary-seed"}})
	assert.Equal(t, 1, r.Status, r.Stderr)
	assert.Equal(t, "txexec: run 2 of 2 (seed 10) differs from run 1 in stdout\n", r.Stderr)

	r = run(t, transaction, command{Argv: []string{"true"}, TxArgs: []string{"--repeat", "2"}})
	assert.Equal(t, 2, r.Status)
	assert.Equal(t, "txexec: --repeat needs --deterministic\n", r.Stderr)
}

// TestReplayCommit: replay --commit runs the recording on the host when
// the host still holds what it read, and commits when the outcome is the
// recorded one; once the host has changed it runs nothing.
func TestReplayCommit(t *testing.T) {
	testenv.NeedRoot(t, "--deterministic makes a pid namespace")
	requireTools(t, "sh", "cat", "sort", "date")
	dir, state := t.TempDir(), t.TempDir()
	env := []string{"TXEXEC_STATE_DIR=" + state}
	writeFiles(t, dir, map[string]string{"in.txt": "3\n1\n2\n"})
	rec := run(t, transaction, command{Argv: []string{"sh", "-c", "cat in.txt | sort > out.txt; date"}, Dir: dir, Env: env,
		TxArgs: []string{"--record", "--on-exit=abort"}})
	require.Equal(t, 0, rec.Status, rec.Stderr)
	id := recordingID(t, rec.Stderr)
	assert.NoFileExists(t, filepath.Join(dir, "out.txt"), "recorded, and aborted")

	rep := run(t, native, command{Argv: []string{txexecBin, "replay", id, "--commit"}, Env: env})
	require.Equal(t, 0, rep.Status, rep.Stderr)
	assert.Regexp(t, `^replay of recording `+id+`: identical: exit status 0, stdout, stderr and 2 changes; transaction \d+ committed\n$`, rep.Stdout)
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "1\n2\n3\n", string(b))

	writeFiles(t, dir, map[string]string{"in.txt": "changed\n"})
	before := snapshotTree(t, dir, nil)
	rep = run(t, native, command{Argv: []string{txexecBin, "replay", id, "--commit"}, Env: env})
	assert.Equal(t, 75, rep.Status)
	assert.Contains(t, rep.Stderr, "txexec: replay --commit: the host no longer holds what the run read: ")
	assert.Equal(t, before, snapshotTree(t, dir, nil))
}
