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
// returns how many sync calls txexec [opts] made from the moment the
// command began creating them: for the staging, the commit and the
// write-through. strace attaches to txexec (every thread, and those it
// starts) once the command is running, since txexec itself ptraces the
// command and strace -f from the start would take that place.
func commitSyncs(t *testing.T, n int, opts ...string) int {
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
	return countCalls(t, readString(t, out), syncCalls)
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

// TestDurableSyncsAreBatched: a durable commit syncs a constant number of
// times, whatever the number of files it writes (the staged data with one
// syncfs per file system, the store's commit, each changed directory
// once): 500 files cost no more syncs than 50. --no-durable makes none.
func TestDurableSyncsAreBatched(t *testing.T) {
	requireTools(t, "strace")
	small := commitSyncs(t, 50)
	large := commitSyncs(t, 500)
	t.Logf("sync calls of a durable commit: %d for 50 files, %d for 500", small, large)
	assert.Positive(t, small, "a durable commit syncs")
	assert.LessOrEqual(t, large, small+2, "the syncs must not grow with the number of files")
	assert.LessOrEqual(t, large, 20, "a handful of syncs, not one per file")
	assert.Zero(t, commitSyncs(t, 500, "--no-durable"), "--no-durable syncs nothing")
}
