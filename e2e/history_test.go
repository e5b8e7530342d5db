package e2e

// History, kept transactions and the subcommands that show and finish
// them: txexec log, show, commit, abort, recover, and --on-exit=keep.
// The helpers at the top (txState and friends) are shared by
// crash_test.go and concurrency_test.go: several runs against one state
// directory, which baseEnv does not do.

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// txState is one txexec state directory shared by several runs.
type txState struct{ dir string }

func newTxState(t testing.TB) txState {
	t.Helper()
	return txState{dir: filepath.Join(t.TempDir(), "state")}
}

// txResult is a finished txexec (or native) run.
type txResult struct {
	stdout, stderr string
	status         int  // exit code, or 128+N for signal N
	killed         bool // died of SIGKILL
}

// env is the environment of a run against s: the test's own without
// TXEXEC_* (a fault armed for the test binary must not leak), plus extra.
func (s txState) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TXEXEC_") {
			env = append(env, kv)
		}
	}
	return append(append(env, "LC_ALL=C", "TZ=UTC", "TXEXEC_STATE_DIR="+s.dir), extra...)
}

// cmd prepares txexec ARGS in cwd against s.
func (s txState) cmd(cwd string, env []string, args ...string) *exec.Cmd {
	c := exec.Command(txexecBin, args...)
	c.Dir = cwd
	c.Env = append(s.env(env...), "GOTRACEBACK=all")
	return c
}

// run runs txexec ARGS in cwd against s and waits for it.
func (s txState) run(t testing.TB, cwd string, env []string, args ...string) txResult {
	t.Helper()
	c := s.cmd(cwd, env, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatalf("start %q: %v", c.Args, err)
	}
	// A txexec that hangs would hold the whole suite until go test's
	// timeout, which names the test but not where txexec is: SIGABRT
	// (txexec catches SIGQUIT for its command) makes the Go runtime print
	// every goroutine's stack on its stderr (GOTRACEBACK=all).
	var hung atomic.Bool
	watchdog := time.AfterFunc(txexecRunLimit, func() {
		hung.Store(true)
		c.Process.Signal(syscall.SIGABRT)
	})
	err := c.Wait()
	watchdog.Stop()
	if hung.Load() {
		t.Fatalf("txexec %q did not finish within %v; its stacks:\n%s", c.Args, txexecRunLimit, errb.String())
	}
	return finished(t, c, err, &out, &errb)
}

// txexecRunLimit bounds one txexec run of the e2e tests: each takes
// seconds.
const txexecRunLimit = 2 * time.Minute

// finished turns the outcome of c into a txResult.
func finished(t testing.TB, c *exec.Cmd, err error, out, errb *bytes.Buffer) txResult {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %q: %v", c.Args, err)
	}
	r := txResult{stdout: out.String(), stderr: errb.String()}
	ws := c.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		r.status = 128 + int(ws.Signal())
		r.killed = ws.Signal() == syscall.SIGKILL
	default:
		r.status = ws.ExitStatus()
	}
	return r
}

// tx runs "txexec [opts] -- sh -c SCRIPT" in cwd against s.
func (s txState) tx(t testing.TB, cwd, script string, opts ...string) txResult {
	t.Helper()
	return s.run(t, cwd, nil, append(opts, "--", "sh", "-c", script)...)
}

// logEntry is one element of txexec log --json.
type logEntry struct {
	ID       int64    `json:"id"`
	State    string   `json:"state"`
	When     string   `json:"when"`
	Command  []string `json:"command"`
	Cwd      string   `json:"cwd"`
	Status   *int     `json:"status"`
	Reason   string   `json:"reason"`
	Seq      int64    `json:"seq"`
	StartSeq int64    `json:"start_seq"`
	Begun    string   `json:"begun"`
	Ops      int      `json:"ops"`
	Writes   int      `json:"writes"`
	Reads    int      `json:"reads"`
}

// log returns txexec log --json, newest first.
func (s txState) log(t testing.TB) []logEntry {
	t.Helper()
	r := s.run(t, "/", nil, "log", "--json")
	require.Equal(t, 0, r.status, "txexec log --json: %s", r.stderr)
	var entries []logEntry
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &entries), "txexec log --json:\n%s", r.stdout)
	return entries
}

// entry returns transaction id from the log.
func (s txState) entry(t testing.TB, id int64) logEntry {
	t.Helper()
	for _, e := range s.log(t) {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("transaction %d is not in txexec log", id)
	return logEntry{}
}

// stagingLeft lists what is left in the staging area.
func (s txState) stagingLeft(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(s.dir, "staging"))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

var txIDLine = regexp.MustCompile(`txexec: transaction ([0-9]+) `)

// txID is the transaction id the first "txexec: transaction N" line of
// stderr names.
func txID(t testing.TB, stderr string) int64 {
	t.Helper()
	m := txIDLine.FindStringSubmatch(stderr)
	require.NotNil(t, m, "no transaction id in stderr:\n%s", stderr)
	var id int64
	fmt.Sscan(m[1], &id)
	return id
}

// undoAreaPrefix begins the names of undo areas at mount roots
// (store.UndoAreaPrefix).
const undoAreaPrefix = ".txexec-undo-"

// treeState describes every object under root, for all-or-nothing
// checks: type, permissions, owner, link count, content hash of regular
// files, symlink targets, and the mtimes that a script set explicitly
// (those before 2005; all others are the time of the run). Directory
// sizes and times are left out.
func treeState(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && strings.HasPrefix(rel, undoAreaPrefix) && !strings.Contains(rel, "/") {
			// At a mount's root: the before-images txexec undo needs,
			// which stay after the commit.
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %v %d:%d", rel, info.Mode(), st.Uid, st.Gid)
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			line += " -> " + target
		case info.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" nlink=%d sha256=%x", st.Nlink, sha256.Sum256(b))
			if st.Mtim.Sec < 1_100_000_000 {
				line += fmt.Sprintf(" mtime=%d.%09d", st.Mtim.Sec, st.Mtim.Nsec)
			}
		}
		out = append(out, line)
		return nil
	})
	require.NoError(t, err, "describe %s", root)
	sort.Strings(out)
	return out
}

// copyTree copies the tree at src to dst (which must not exist), keeping
// modes, hard links among its files, symlinks and mtimes.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	out, err := exec.Command("cp", "-a", src, dst).CombinedOutput()
	require.NoError(t, err, "cp -a %s %s: %s", src, dst, out)
}

// nativeRun runs sh -c script in cwd without txexec and requires it to
// succeed.
func nativeRun(t testing.TB, cwd, script string) {
	t.Helper()
	c := exec.Command("sh", "-c", script)
	c.Dir = cwd
	out, err := c.CombinedOutput()
	require.NoError(t, err, "native sh -c %q: %s", script, out)
}

// historyScript changes a small tree in every way show describes.
const historyScript = `set -e
printf 'one\nTWO\nthree\nfour\n' > edit.txt
echo fresh > new.txt
mv old.txt moved.txt
rm gone.txt
mkdir made
chmod 0700 sub
cat keep.txt > /dev/null`

func historyFixture(t testing.TB, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	for name, content := range map[string]string{
		"edit.txt": "one\ntwo\nthree\n", "old.txt": "old\n", "gone.txt": "gone\n", "keep.txt": "keep\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
}

func TestHistoryLogAndShow(t *testing.T) {
	s := newTxState(t)
	work := t.TempDir()
	historyFixture(t, work)

	r := s.tx(t, work, historyScript)
	require.Equal(t, 0, r.status, "stderr: %s", r.stderr)
	r = s.tx(t, work, "echo doomed > doomed.txt; exit 3")
	require.Equal(t, 3, r.status)
	r = s.tx(t, work, "echo never > never.txt", "--on-exit=abort")
	require.Equal(t, 0, r.status)
	assert.NoFileExists(t, filepath.Join(work, "doomed.txt"))
	assert.NoFileExists(t, filepath.Join(work, "never.txt"))

	entries := s.log(t)
	require.Len(t, entries, 3)
	assert.Equal(t, []int64{3, 2, 1}, []int64{entries[0].ID, entries[1].ID, entries[2].ID}, "newest first")
	first, failed, aborted := entries[2], entries[1], entries[0]
	assert.Equal(t, "applied", first.State)
	assert.Equal(t, []string{"sh", "-c", historyScript}, first.Command)
	assert.Equal(t, work, first.Cwd)
	require.NotNil(t, first.Status)
	assert.Equal(t, 0, *first.Status)
	assert.Equal(t, int64(1), first.Seq)
	assert.NotEmpty(t, first.When)
	assert.NotEmpty(t, first.Begun)
	assert.Positive(t, first.Ops)
	assert.Positive(t, first.Writes)
	assert.Positive(t, first.Reads)
	assert.Equal(t, "aborted", failed.State)
	assert.Equal(t, "the command exited with status 3", failed.Reason)
	require.NotNil(t, failed.Status)
	assert.Equal(t, 3, *failed.Status)
	assert.Zero(t, failed.Seq)
	assert.Equal(t, "aborted", aborted.State)
	assert.Equal(t, "--on-exit=abort", aborted.Reason)
	assert.Equal(t, int64(1), aborted.StartSeq, "it began after transaction 1 was written through")

	// The JSON field names are an interface.
	r = s.run(t, "/", nil, "log", "--json")
	var raw []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw))
	for _, key := range []string{"id", "state", "when", "command", "cwd", "status", "reason", "seq", "start_seq", "begun", "ops", "writes", "reads"} {
		assert.Contains(t, raw[0], key)
	}

	r = s.run(t, "/", nil, "log")
	require.Equal(t, 0, r.status)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^3 +aborted .* status 0 .*echo never > never.txt.*\(--on-exit=abort\)$`, lines[0])
	assert.Regexp(t, `^2 +aborted .* status 3 .*\(the command exited with status 3\)$`, lines[1])
	assert.Regexp(t, `^1 +applied .* status 0 +sh -c `, lines[2])

	r = s.run(t, "/", nil, "show", "1")
	require.Equal(t, 0, r.status, r.stderr)
	p := func(name string) string { return filepath.Join(work, name) }
	assert.True(t, strings.HasPrefix(r.stdout, "transaction 1: applied\n"), r.stdout)
	for _, want := range []string{
		"replace " + p("edit.txt"),
		"create " + p("new.txt"),
		"rename " + p("old.txt") + " -> " + p("moved.txt"),
		"remove " + p("gone.txt"),
		"mkdir " + p("made"),
		"chmod 0700 " + p("sub"),
	} {
		assert.Contains(t, r.stdout, "\n  "+want+"\n", "txexec show 1:\n%s", r.stdout)
	}
	_, changes, _ := strings.Cut(r.stdout, "\nchanges")
	assert.NotContains(t, changes, "keep.txt", "read, not changed")

	// Written through, it is diffed against the before-images it kept.
	r = s.run(t, "/", nil, "show", "1", "--diff")
	require.Equal(t, 0, r.status)
	edit := filepath.Join(work, "edit.txt")
	assert.Contains(t, r.stdout, "--- "+edit+"\n+++ "+edit+"\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n three\n+four\n")
	assert.Contains(t, r.stdout, "--- /dev/null\n+++ "+filepath.Join(work, "new.txt")+"\n@@ -0,0 +1 @@\n+fresh\n")
	assert.Contains(t, r.stdout, "--- "+filepath.Join(work, "gone.txt")+"\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n")
	assert.NotContains(t, r.stdout, "+++ "+filepath.Join(work, "moved.txt"), "moved: the rename line says it")
	r = s.run(t, work, nil, "--undo=none", "--", "sh", "-c", "echo x > none.txt")
	require.Equal(t, 0, r.status, r.stderr)
	r = s.run(t, "/", nil, "show", "4", "--diff")
	require.Equal(t, 0, r.status)
	assert.Contains(t, r.stdout, "diff not available: transaction 4 is applied and kept no before-images")

	r = s.run(t, "/", nil, "show", "2")
	require.Equal(t, 0, r.status)
	assert.Contains(t, r.stdout, "transaction 2: aborted")
	assert.Contains(t, r.stdout, "reason:    the command exited with status 3")
	assert.Contains(t, r.stdout, "changes:   none recorded")
}

func TestHistoryRefusals(t *testing.T) {
	s := newTxState(t)
	work := t.TempDir()
	require.Equal(t, 0, s.tx(t, work, "echo x > x").status)
	tests := []struct {
		args       []string
		wantStatus int
		wantStderr string
	}{
		{[]string{"show", "99"}, 1, "txexec: no transaction 99\n"},
		{[]string{"commit", "99"}, 1, "txexec: no transaction 99\n"},
		{[]string{"show", "abc"}, 2, "txexec: show: \"abc\" is not a transaction id\n"},
		{[]string{"abort", "-3"}, 2, "txexec: abort: unknown option -3 (see txexec --help)\n"},
		{[]string{"commit"}, 2, "txexec: commit: which transaction? (usage: txexec commit ID)\n"},
		{[]string{"commit", "1"}, 1, "txexec: transaction 1 is applied; only kept transactions can be committed\n"},
		{[]string{"abort", "1"}, 1, "txexec: transaction 1 is applied; only kept transactions can be aborted\n"},
		{[]string{"log", "--diff"}, 2, "txexec: log: unknown option --diff (see txexec --help)\n"},
		{[]string{"show", "1", "2"}, 2, "txexec: show: unexpected argument \"2\"\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := s.run(t, "/", nil, tt.args...)
			assert.Equal(t, tt.wantStatus, r.status)
			assert.Equal(t, tt.wantStderr, r.stderr)
		})
	}
	assert.Equal(t, "applied", s.entry(t, 1).State, "refusals change nothing")
}

func TestKeepThenCommit(t *testing.T) {
	s := newTxState(t)
	work, native := filepath.Join(t.TempDir(), "work"), filepath.Join(t.TempDir(), "native")
	historyFixture(t, work)
	copyTree(t, work, native)
	nativeRun(t, native, historyScript)
	before := treeState(t, work)

	r := s.tx(t, work, historyScript, "--on-exit=keep")
	require.Equal(t, 0, r.status, r.stderr)
	id := txID(t, r.stderr)
	assert.Equal(t, fmt.Sprintf("txexec: transaction %d kept; finish it with txexec commit %d or txexec abort %d\n", id, id, id), r.stderr)
	assert.Equal(t, before, treeState(t, work), "a kept transaction changes nothing yet")
	assert.Equal(t, "kept", s.entry(t, id).State)
	assert.Equal(t, []string{fmt.Sprint(id)}, s.stagingLeft(t), "its staged data is kept")

	// Recovery leaves kept transactions alone.
	r = s.run(t, "/", nil, "recover")
	require.Equal(t, 0, r.status)
	assert.Equal(t, "nothing to recover\n", r.stdout)

	r = s.run(t, "/", nil, "show", fmt.Sprint(id), "--diff")
	require.Equal(t, 0, r.status, r.stderr)
	edit := filepath.Join(work, "edit.txt")
	assert.Contains(t, r.stdout, "--- "+edit+"\n+++ "+edit+"\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n three\n+four\n")
	assert.Contains(t, r.stdout, "--- /dev/null\n+++ "+filepath.Join(work, "new.txt")+"\n@@ -0,0 +1 @@\n+fresh\n")
	gone := filepath.Join(work, "gone.txt")
	assert.Contains(t, r.stdout, "--- "+gone+"\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n")

	r = s.run(t, "/", nil, "commit", fmt.Sprint(id))
	require.Equal(t, 0, r.status, r.stderr)
	assert.Equal(t, fmt.Sprintf("txexec: transaction %d committed\n", id), r.stderr)
	assert.Equal(t, treeState(t, native), treeState(t, work), "committed: the same tree as the script run natively")
	assert.Equal(t, "applied", s.entry(t, id).State)
	assert.Empty(t, s.stagingLeft(t))

	r = s.run(t, "/", nil, "commit", fmt.Sprint(id))
	assert.Equal(t, 1, r.status)
	assert.Equal(t, fmt.Sprintf("txexec: transaction %d is applied; only kept transactions can be committed\n", id), r.stderr)
}

func TestKeepThenAbort(t *testing.T) {
	s := newTxState(t)
	work := t.TempDir()
	historyFixture(t, work)
	before := treeState(t, work)

	r := s.tx(t, work, historyScript+"\nexit 4", "--on-exit=keep")
	require.Equal(t, 4, r.status, "the command's status, also when kept")
	id := txID(t, r.stderr)
	require.Equal(t, "kept", s.entry(t, id).State)

	r = s.run(t, "/", nil, "abort", fmt.Sprint(id))
	require.Equal(t, 0, r.status, r.stderr)
	assert.Equal(t, fmt.Sprintf("txexec: transaction %d aborted: aborted with txexec abort\n", id), r.stderr)
	assert.Equal(t, before, treeState(t, work))
	e := s.entry(t, id)
	assert.Equal(t, "aborted", e.State)
	assert.Equal(t, "aborted with txexec abort", e.Reason)
	assert.Empty(t, s.stagingLeft(t))

	r = s.run(t, "/", nil, "show", fmt.Sprint(id), "--diff")
	require.Equal(t, 0, r.status)
	assert.Contains(t, r.stdout, "replace "+filepath.Join(work, "edit.txt"), "what it would have done stays in the history")
	assert.Contains(t, r.stdout, "diff not available")

	r = s.run(t, "/", nil, "commit", fmt.Sprint(id))
	assert.Equal(t, 1, r.status)
	assert.Equal(t, fmt.Sprintf("txexec: transaction %d is aborted; only kept transactions can be committed\n", id), r.stderr)
}

// TestKeepCommitRevalidates: txexec commit of a kept transaction validates
// what it read, as a live commit would, from the read set stored with it:
// against transactions committed since it began and against the host.
func TestKeepCommitRevalidates(t *testing.T) {
	tests := []struct {
		name string
		// change changes read.txt after the transaction was kept.
		change     func(t *testing.T, s txState, work string)
		wantReason string
	}{
		{"nothing changed", func(*testing.T, txState, string) {}, ""},
		{"another transaction", func(t *testing.T, s txState, work string) {
			require.Equal(t, 0, s.tx(t, work, "echo changed > read.txt").status)
		}, "its data was changed by transaction 2, committed after this one began"},
		{"another transaction's chmod", func(t *testing.T, s txState, work string) {
			require.Equal(t, 0, s.tx(t, work, "chmod 0600 read.txt").status)
		}, ""},
		{"an unsupervised process", func(t *testing.T, s txState, work string) {
			require.NoError(t, os.WriteFile(filepath.Join(work, "read.txt"), []byte("other\n"), 0o644))
		}, "modified by another process after it was read"},
		{"an unsupervised process, same size and mode", func(t *testing.T, s txState, work string) {
			require.NoError(t, os.WriteFile(filepath.Join(work, "read.txt"), []byte("READ\n"), 0o644))
		}, "modified by another process after it was read"},
		{"an unrelated file in the directory", func(t *testing.T, s txState, work string) {
			require.NoError(t, os.WriteFile(filepath.Join(work, "unrelated.txt"), []byte("x\n"), 0o644))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTxState(t)
			work := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(work, "read.txt"), []byte("read\n"), 0o644))
			r := s.tx(t, work, "cat read.txt > copy.txt", "--on-exit=keep")
			require.Equal(t, 0, r.status, r.stderr)
			id := txID(t, r.stderr)
			require.Equal(t, int64(1), id)
			tt.change(t, s, work)

			r = s.run(t, "/", nil, "commit", fmt.Sprint(id))
			if tt.wantReason == "" {
				require.Equal(t, 0, r.status, r.stderr)
				assert.Equal(t, "read\n", readString(t, filepath.Join(work, "copy.txt")))
				assert.Equal(t, "applied", s.entry(t, id).State)
				return
			}
			assert.Equal(t, 75, r.status)
			want := fmt.Sprintf("txexec: transaction %d aborted: conflict on %s (%s)\n", id, filepath.Join(work, "read.txt"), tt.wantReason)
			assert.Equal(t, want, r.stderr)
			assert.NoFileExists(t, filepath.Join(work, "copy.txt"))
			assert.Equal(t, "aborted", s.entry(t, id).State)
			assert.Empty(t, s.stagingLeft(t))
		})
	}
}

func readString(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
