package e2e

// Durability: the syncs a commit makes, counted by strace on txexec
// itself.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncCalls are the system calls that make data durable.
var syncCalls = []string{"fsync", "fdatasync", "syncfs", "sync", "sync_file_range", "msync"}

// commitSyncs runs a transaction that creates n files in one directory and
// returns how many of each sync call txexec [opts] made from the moment
// the command began creating them: for the staging, the commit and the
// write-through. strace attaches to txexec (every thread, and those it
// starts) once the command is running, since txexec itself ptraces the
// command and strace -f from the start would take that place.
func commitSyncs(t *testing.T, n int, opts ...string) map[string]int {
	t.Helper()
	s := newTxState(t)
	work := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(work, "d"), 0o755))
	h := s.startHeld(t, work,
		fmt.Sprintf(`echo ready; read x; i=0; while [ $i -lt %d ]; do echo $i > d/f$i; i=$((i+1)); done`, n), opts...)
	h.ready(t)

	out := filepath.Join(t.TempDir(), "strace")
	st := exec.Command("strace", "-f", "-c", "-o", out, "-e", "trace="+strings.Join(syncCalls, ","),
		"-p", strconv.Itoa(h.cmd.Process.Pid))
	stderr, err := st.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, st.Start())
	t.Cleanup(func() {
		if st.ProcessState == nil {
			st.Process.Kill()
			st.Wait()
		}
	})
	lines := newLineReader(stderr)
	for {
		// "strace: Process N attached with M threads", once all are.
		if l := lines.next(t); strings.Contains(l, "attached") {
			break
		}
	}

	r := h.finish(t)
	require.Equal(t, 0, r.status, r.stderr)
	for range lines.lines {
	}
	require.NoError(t, st.Wait(), "strace")
	ents, err := os.ReadDir(filepath.Join(work, "d"))
	require.NoError(t, err)
	require.Len(t, ents, n, "the files are committed")
	summary := readString(t, out)
	calls := map[string]int{}
	for _, c := range syncCalls {
		calls[c] = countCalls(t, summary, []string{c})
	}
	return calls
}

// countCalls sums the calls column of strace -c's summary for names.
func countCalls(t *testing.T, summary string, names []string) int {
	t.Helper()
	total := 0
	for _, l := range strings.Split(summary, "\n") {
		f := strings.Fields(l)
		// % time, seconds, usecs/call, calls, [errors,] syscall
		if len(f) < 5 || !slices.Contains(names, f[len(f)-1]) {
			continue
		}
		k, err := strconv.Atoi(f[3])
		require.NoError(t, err, "strace summary line %q", l)
		total += k
	}
	return total
}

// TestDurableSyncsEveryStagedFile: a durable commit fsyncs each staged
// file, not the file system (syncfs does not reach every file system: a
// FUSE one's but virtiofs), so a commit of 500 files makes at least 500
// fsyncs and no syncfs or sync; --no-durable makes no sync call at all.
func TestDurableSyncsEveryStagedFile(t *testing.T) {
	requireTools(t, "strace")
	for _, n := range []int{50, 500} {
		calls := commitSyncs(t, n)
		t.Logf("sync calls of a durable commit of %d files: %v", n, calls)
		assert.GreaterOrEqual(t, calls["fsync"]+calls["fdatasync"], n, "an fsync per staged file")
		assert.Zero(t, calls["syncfs"]+calls["sync"], "no file-system-wide sync")
	}
	for c, k := range commitSyncs(t, 500, "--no-durable") {
		assert.Zero(t, k, "--no-durable makes no %s", c)
	}
}

// TestFailedFsync: an fsync that fails (EIO, injected with
// TXEXEC_FAIL_FSYNC) before the commit point aborts the transaction with
// one line that says which; one that fails after it, in the
// write-through, leaves the transaction committed and not applied, and
// txexec exits 70, not 0; txexec recover then finishes it.
func TestFailedFsync(t *testing.T) {
	script := "echo new > a; mkdir d; echo x > d/f"
	t.Run("before the commit point", func(t *testing.T) {
		s := newTxState(t)
		work := t.TempDir()
		writeFiles(t, work, map[string]string{"a": "old\n"})
		r := s.run(t, work, []string{"TXEXEC_FAIL_FSYNC=/staging/"}, "--", "sh", "-c", script)
		assert.Equal(t, 70, r.status, r.stderr)
		id := txID(t, r.stderr)
		assert.Regexp(t, `^txexec: transaction [0-9]+ aborted: make the staged changes durable: fsync /\S+: input/output error\n$`, r.stderr)
		assert.Equal(t, "old\n", readString(t, filepath.Join(work, "a")))
		assert.NoDirExists(t, filepath.Join(work, "d"))
		e := s.entry(t, id)
		assert.Equal(t, "aborted", e.State)
		assert.Contains(t, e.Reason, "input/output error")
	})
	t.Run("after the commit point", func(t *testing.T) {
		s := newTxState(t)
		work := t.TempDir()
		writeFiles(t, work, map[string]string{"a": "old\n"})
		r := s.run(t, work, []string{"TXEXEC_FAIL_FSYNC=" + work}, "--", "sh", "-c", script)
		assert.Equal(t, 70, r.status, "never success after a failed fsync: %s", r.stderr)
		assert.Contains(t, r.stderr, "(recovery will finish it)")
		assert.Contains(t, r.stderr, "input/output error")

		// recover (which, unlike every other command, does not recover
		// silently first) finds it committed and not applied.
		r = s.run(t, "/", nil, "recover")
		assert.Equal(t, 0, r.status, r.stderr)
		assert.Contains(t, r.stdout, "transaction 1: committed; finished writing it through", "not applied while an fsync failed")
		assert.Equal(t, "applied", s.entry(t, 1).State)
		assert.Equal(t, "new\n", readString(t, filepath.Join(work, "a")))
		assert.Equal(t, "x\n", readString(t, filepath.Join(work, "d", "f")))
	})
}
