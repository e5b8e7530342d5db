package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inProgram runs the program supervised without a transaction of its own:
// its threads begin theirs (include/txexec.h).
const inProgram = passthrough

// buildTxAPI compiles testdata/txapi.c against include/txexec.h.
func buildTxAPI(t *testing.T, dir string) string {
	t.Helper()
	include, err := filepath.Abs(filepath.Join("..", "include"))
	require.NoError(t, err)
	return buildC(t, dir, "txapi", "txapi", "-I", include)
}

// TestProgramTxCounter: 4 threads × 50 read-modify-write increments of one
// counter file, each in xrun, end at 200, while a reader outside txexec
// only ever sees committed values (a whole number, never going back).
func TestProgramTxCounter(t *testing.T) {
	dir := t.TempDir()
	bin := buildTxAPI(t, dir)
	counter := filepath.Join(dir, "counter")
	require.NoError(t, os.WriteFile(counter, []byte("0\n"), 0o644))

	ctx, cancel := context.WithCancel(context.Background())
	var reads, bad atomic.Int64
	var badValue atomic.Value
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		last := 0
		for ctx.Err() == nil {
			b, err := os.ReadFile(counter)
			if err != nil {
				bad.Add(1)
				badValue.Store("read error: " + err.Error())
				continue
			}
			n, err := strconv.Atoi(strings.TrimSuffix(string(b), "\n"))
			if err != nil || n < last || n > 200 || !strings.HasSuffix(string(b), "\n") {
				bad.Add(1)
				badValue.Store(strconv.Quote(string(b)))
				continue
			}
			last = n
			reads.Add(1)
		}
	}()
	r := run(t, inProgram, command{Argv: []string{bin, "counter", counter, "4", "50"}, Dir: dir})
	cancel()
	<-readerDone
	require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
	b, err := os.ReadFile(counter)
	require.NoError(t, err)
	assert.Equal(t, "200\n", string(b))
	assert.Zero(t, bad.Load(), "the outside reader saw a value never committed: %v", badValue.Load())
	t.Logf("the outside reader read the counter %d times", reads.Load())
}

// TestProgramTxTwoSupervisors: the in-program transactions of two txexec
// processes sharing a state directory validate against each other as
// those of one do: 2 programs × 2 threads × 25 increments end at 100.
func TestProgramTxTwoSupervisors(t *testing.T) {
	dir := t.TempDir()
	bin := buildTxAPI(t, dir)
	counter := filepath.Join(dir, "counter")
	require.NoError(t, os.WriteFile(counter, []byte("0\n"), 0o644))
	state := "TXEXEC_STATE_DIR=" + t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range 2 {
		cmd := newCmd(ctx, t, inProgram, command{Argv: []string{bin, "counter", counter, "2", "25"}, Dir: dir, Env: []string{state}})
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		assert.NoError(t, cmd.Wait(), "%s", outs[i])
	}
	b, err := os.ReadFile(counter)
	require.NoError(t, err)
	assert.Equal(t, "100\n", string(b))
}

// TestProgramTxAbortAndPause: a transaction that writes 3 files and
// xaborts leaves them byte-identical; the line written between xpause and
// xresume survives. In-program, and inside a command-tree transaction
// (xbegin nests flat, xpause escapes to the host, xabort aborts the tree's
// transaction).
func TestProgramTxAbortAndPause(t *testing.T) {
	for _, m := range []mode{inProgram, transaction} {
		t.Run(m.String(), func(t *testing.T) {
			dir := t.TempDir()
			bin := buildTxAPI(t, t.TempDir())
			data := filepath.Join(dir, "data")
			require.NoError(t, os.Mkdir(data, 0o755))
			writeFiles(t, data, map[string]string{"a": "first\n", "b": "second\n", "c": "third\n"})
			log := filepath.Join(dir, "log")
			require.NoError(t, os.WriteFile(log, []byte("started\n"), 0o644))
			before := snapshotTree(t, data, nil)

			r := run(t, m, command{Argv: []string{bin, "abort", data, log}, Dir: dir})
			require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
			assert.Equal(t, "xend=-1 ECANCELED\n", r.Stdout)
			assert.Equal(t, before, snapshotTree(t, data, nil), "the host is byte-identical")
			b, err := os.ReadFile(log)
			require.NoError(t, err)
			assert.Equal(t, "started\nlogged while paused\n", string(b))
			if m == transaction {
				assert.Contains(t, r.Stderr, "called xabort", "the tree's transaction says why it aborted")
			}
		})
	}
}

// TestProgramTxIsolation: another thread of the same process sees the host
// until the transaction commits.
func TestProgramTxIsolation(t *testing.T) {
	dir := t.TempDir()
	bin := buildTxAPI(t, dir)
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("original\n"), 0o644))
	r := run(t, inProgram, command{Argv: []string{bin, "isolation", file}, Dir: dir})
	require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
	assert.Equal(t, "before commit: original\nafter commit: written in the transaction\n", r.Stdout)
}

// TestProgramTxExitInside: a process that exits inside its transaction
// aborts it.
func TestProgramTxExitInside(t *testing.T) {
	dir := t.TempDir()
	bin := buildTxAPI(t, dir)
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("original\n"), 0o644))
	r := run(t, inProgram, command{Argv: []string{bin, "exit", file}, Dir: dir})
	assert.Equal(t, 3, r.Status, "the program's own status")
	assert.Contains(t, r.Stderr, "exited inside its transaction")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "original\n", string(b))
}

// TestProgramTxUnsupported: a call without transactional meaning dooms
// the transaction (xend: ECANCELED, rolled back), or with
// TX_ERROR_UNSUPPORTED fails alone with ENOTSUP while the transaction
// commits.
func TestProgramTxUnsupported(t *testing.T) {
	dir := t.TempDir()
	bin := buildTxAPI(t, dir)
	for _, tc := range []struct {
		name, flags, stdout, file string
	}{
		{"dooms", "0", "io_uring_setup=-1 ENOTSUP\nxend=-1 ECANCELED\n", "original\n"},
		{"TX_ERROR_UNSUPPORTED", "2", "io_uring_setup=-1 ENOTSUP\nxend=0 \n", "written in the transaction\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "file")
			require.NoError(t, os.WriteFile(file, []byte("original\n"), 0o644))
			r := run(t, inProgram, command{Argv: []string{bin, "unsupported", tc.flags, file}, Dir: dir})
			require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
			assert.Equal(t, tc.stdout, r.Stdout)
			assert.Contains(t, r.Stderr, "io_uring_setup", "txexec names the call")
			if tc.flags == "2" {
				assert.Contains(t, r.Stderr, "(TX_ERROR_UNSUPPORTED)", "and why it fails")
			}
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, tc.file, string(b))
		})
	}
}

// TestProgramTxNonDurable: a durable xend fsyncs the staged file before
// its commit point, so a disk that fails that fsync makes it fail with EIO
// and leaves the host as it was; with TX_NONDURABLE nothing is fsynced and
// the same transaction commits.
func TestProgramTxNonDurable(t *testing.T) {
	dir := t.TempDir()
	bin := buildTxAPI(t, dir)
	for _, tc := range []struct {
		name, flags, stdout, file string
	}{
		{"durable", "0", "xend=-1 EIO\n", "original\n"},
		{"TX_NONDURABLE", "1", "xend=0 \n", "written in the transaction\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "file")
			require.NoError(t, os.WriteFile(file, []byte("original\n"), 0o644))
			r := run(t, inProgram, command{
				Argv: []string{bin, "commit", tc.flags, file}, Dir: dir,
				Env: []string{"TXEXEC_FAIL_FSYNC=/staging/"},
			})
			require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
			assert.Equal(t, tc.stdout, r.Stdout, "stderr: %s", r.Stderr)
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, tc.file, string(b))
		})
	}
}

// TestProgramTxOrdered: TX_ORDERED commits follow the sequence numbers,
// not the threads' timing (the later numbers start first), also with more
// threads waiting for their turn than interpose.DefaultMaxWorkers.
func TestProgramTxOrdered(t *testing.T) {
	dir := t.TempDir()
	bin := buildTxAPI(t, dir)
	for _, n := range []int{6, 100} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "order"), nil, 0o644))
			r := run(t, inProgram, command{Argv: []string{bin, "ordered", dir, strconv.Itoa(n)}, Dir: dir})
			require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
			b, err := os.ReadFile(filepath.Join(dir, "order"))
			require.NoError(t, err)
			var want strings.Builder
			for i := range n {
				fmt.Fprintf(&want, "%d\n", i)
			}
			assert.Equal(t, want.String(), string(b))
		})
	}
}

// TestProgramTxOutsideTxexec: without txexec the kernel answers ENOSYS,
// and the Python wrapper says so clearly (the Go one: tx.TestOutsideTxexec).
func TestProgramTxOutsideTxexec(t *testing.T) {
	dir := t.TempDir()
	bin := buildTxAPI(t, dir)
	r := run(t, native, command{Argv: []string{bin, "probe"}, Dir: dir})
	assert.Equal(t, "ENOSYS\n", r.Stdout)
	r = run(t, inProgram, command{Argv: []string{bin, "probe"}, Dir: dir})
	assert.Equal(t, "ok\n", r.Stdout, "stderr: %s", r.Stderr)

	requireTools(t, "python3")
	r = run(t, native, pythonTxAPI(t, dir, "probe"))
	require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
	assert.Equal(t, "NotSupervised: [Errno 38] txexec: xbegin: not running under txexec (xbegin: ENOSYS); start the program with txexec --in-program -- PROGRAM\n", r.Stdout)
}

// pythonTxAPI runs testdata/txapi.py with python/txexec.py importable.
func pythonTxAPI(t *testing.T, dir string, args ...string) command {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "txapi.py"))
	require.NoError(t, err)
	module, err := filepath.Abs(filepath.Join("..", "python"))
	require.NoError(t, err)
	return command{Argv: append([]string{"python3", script}, args...), Dir: dir, Env: []string{"PYTHONPATH=" + module}}
}

// TestProgramTxPython: the Python wrapper's retrying forms (attempts(),
// run()) and its single attempt (transaction()) under txexec.
func TestProgramTxPython(t *testing.T) {
	requireTools(t, "python3")
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter")
	require.NoError(t, os.WriteFile(counter, []byte("0\n"), 0o644))
	r := run(t, inProgram, pythonTxAPI(t, dir, "counter", counter, "4", "25"))
	require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
	b, err := os.ReadFile(counter)
	require.NoError(t, err)
	assert.Equal(t, "100\n", string(b))

	data := filepath.Join(dir, "data")
	require.NoError(t, os.Mkdir(data, 0o755))
	writeFiles(t, data, map[string]string{"a": "first\n"})
	log := filepath.Join(dir, "log")
	r = run(t, inProgram, pythonTxAPI(t, dir, "abort", data, log))
	require.Equal(t, 0, r.Status, "stderr: %s", r.Stderr)
	assert.Equal(t, "rolled back\n", r.Stdout)
	b, err = os.ReadFile(filepath.Join(data, "a"))
	require.NoError(t, err)
	assert.Equal(t, "first\n", string(b))
	b, err = os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "logged while paused\n", string(b))
}

// TestProgramTxMaildirExample: the example server (examples/maildir), one
// transaction per request, under concurrent clients: every acknowledged
// delivery is in its mailbox once, with index and summary in step.
func TestProgramTxMaildirExample(t *testing.T) {
	requireTools(t, "go")
	dir := t.TempDir()
	bin := filepath.Join(dir, "maildir")
	build := exec.Command("go", "build", "-o", bin, "./examples/maildir")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./examples/maildir:\n%s", out)
	mail, sock, acks := filepath.Join(dir, "mail"), filepath.Join(dir, "sock"), filepath.Join(dir, "acks")
	require.NoError(t, os.Mkdir(mail, 0o755))

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	server := newCmd(ctx, t, inProgram, command{Argv: []string{bin, "serve", "-mode", "tx", "-dir", mail, "-socket", sock}, Dir: dir})
	var serverErr bytes.Buffer
	server.Stderr = &serverErr
	require.NoError(t, server.Start())
	waitFor(t, "the server's socket", func() bool {
		st, err := os.Stat(sock)
		return err == nil && st.Mode()&os.ModeSocket != 0
	})
	r := run(t, native, command{Argv: []string{bin, "drive", "-socket", sock, "-clients", "6", "-requests", "30", "-users", "4", "-out", acks}, Dir: dir})
	require.Equal(t, 0, r.Status, "drive: %s", r.Stderr)
	require.NoError(t, server.Wait(), "server: %s", serverErr.String())
	r = run(t, native, command{Argv: []string{bin, "check", "-dir", mail, "-acks", acks}, Dir: dir})
	assert.Equal(t, 0, r.Status, "check: %s", r.Stderr)
	assert.Equal(t, "check: 4 mailboxes, 180 deliveries, all consistent\n", r.Stdout)
}
