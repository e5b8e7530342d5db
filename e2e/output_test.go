package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var droppedOutput = regexp.MustCompile(`(?m)^txexec: dropped ([0-9]+) bytes of output of aborted transaction [0-9]+\n`)

// TestOutputDefer: with --output=defer the command's stdout and stderr
// reach txexec's own after the commit, as natively; at abort they are
// dropped and txexec says how many bytes.
func TestOutputDefer(t *testing.T) {
	requireTools(t, "seq")
	for _, tc := range []struct {
		name   string
		script string
		// abortN, if not 0, is the byte count dropped at abort, where the
		// aborting run gets no stdin (the native run gets "go").
		abortN int
	}{
		{name: "both streams", script: `echo out; echo err >&2; echo out2`},
		{name: "more than a pipe holds", script: `seq 1 200000; seq 1 50000 >&2`},
		{name: "pipeline", script: `seq 1 20000 | sort -n | tail -1`},
		{name: "background writer after the command", script: `exec 3<&0; echo early; (read x <&3 && echo late) &`, abortN: len("early\n")},
		{name: "no output", script: `true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := run(t, native, command{Argv: []string{"sh", "-c", tc.script}, Dir: t.TempDir(), Stdin: strings.NewReader("go\n")})
			require.Equal(t, 0, want.Status)

			got := run(t, transaction, command{Argv: []string{"sh", "-c", tc.script}, Dir: t.TempDir(),
				Stdin: strings.NewReader("go\n"), TxArgs: []string{"--output=defer"}})
			assert.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
			assert.Equal(t, want.Stdout, got.Stdout, "stdout released at commit")
			stderr := regexp.MustCompile(`(?m)^txexec: transaction [0-9]+ waits for pids [0-9 ]+ \(still running after the command exited\)\n`).
				ReplaceAllString(got.Stderr, "")
			assert.Equal(t, want.Stderr, stderr, "stderr released at commit")

			script := tc.script + "\nexit 3"
			stdin := "go\n"
			n := len(want.Stdout) + len(want.Stderr)
			if tc.abortN != 0 {
				stdin, n = "", tc.abortN
			}
			got = run(t, transaction, command{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(),
				Stdin: strings.NewReader(stdin), TxArgs: []string{"--output=defer"}})
			assert.Equal(t, 3, got.Status)
			assert.Empty(t, got.Stdout, "stdout dropped at abort")
			m := droppedOutput.FindStringSubmatch(got.Stderr)
			if n == 0 {
				assert.Nil(t, m, "nothing dropped, nothing said; stderr:\n%s", got.Stderr)
				return
			}
			if assert.NotNil(t, m, "stderr:\n%s", got.Stderr) {
				assert.Equal(t, strconv.Itoa(n), m[1], "the byte count")
			}
			rest := droppedOutput.ReplaceAllString(withoutAbortLine(t, got.Stderr, 3), "")
			assert.Empty(t, rest, "only txexec's own lines on stderr")
		})
	}
}

// TestOutputHeldUntilCommit: under --output=defer nothing reaches txexec's
// stdout while the command runs; under --output=live (and natively) it
// does at once. The command tells the test through a FIFO outside the
// transaction that it has written, then waits.
func TestOutputHeldUntilCommit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      mode
		args   []string
		exit   int
		during string
		after  string
	}{
		{"native", native, nil, 0, "held\n", "held\nafter\n"},
		{"live", transaction, nil, 0, "held\n", "held\nafter\n"},
		{"defer commit", transaction, []string{"--output=defer"}, 0, "", "held\nafter\n"},
		{"defer abort", transaction, []string{"--output=defer"}, 1, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sync := filepath.Join(dir, "sync")
			require.NoError(t, syscall.Mkfifo(sync, 0o600))
			outPath := filepath.Join(dir, "stdout")
			outFile, err := os.Create(outPath)
			require.NoError(t, err)
			defer outFile.Close()
			work := filepath.Join(dir, "work")
			require.NoError(t, os.Mkdir(work, 0o755))
			script := `echo held; echo reached > ` + sync + `; read x; echo after; exit ` + strconv.Itoa(tc.exit)
			cmd := newCmd(context.Background(), t, tc.m, command{Argv: []string{"sh", "-c", script}, Dir: work, TxArgs: tc.args})
			in, err := cmd.StdinPipe()
			require.NoError(t, err)
			cmd.Stdout = outFile
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					cmd.Process.Kill()
					cmd.Wait()
				}
			})
			b, err := os.ReadFile(sync) // blocks until the command has written "held"
			require.NoError(t, err)
			require.Equal(t, "reached\n", string(b))
			assert.Equal(t, tc.during, readString(t, outPath), "txexec's stdout while the command runs")
			_, err = io.WriteString(in, "go\n")
			require.NoError(t, err)
			in.Close()
			err = cmd.Wait()
			if err != nil {
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee)
			}
			assert.Equal(t, tc.exit, statusOf(cmd.ProcessState), "stderr:\n%s", stderr.String())
			assert.Equal(t, tc.after, readString(t, outPath), "txexec's stdout at the end")
		})
	}
}

// TestOutputDeferSameFile: when stdout and stderr are one file, deferred
// output keeps their interleaving.
func TestOutputDeferSameFile(t *testing.T) {
	script := `echo 1; echo 2 >&2; echo 3; echo 4 >&2`
	for _, m := range []mode{native, transaction} {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "out"))
		require.NoError(t, err)
		cmd := newCmd(context.Background(), t, m, command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: []string{"--output=defer"}})
		cmd.Stdout, cmd.Stderr = f, f
		require.NoError(t, cmd.Run())
		f.Close()
		assert.Equal(t, "1\n2\n3\n4\n", readString(t, filepath.Join(dir, "out")), "%s", m)
	}
}

// TestOutputBeforeSignalToTxexec: a command that signals its parent —
// txexec — has that signal held like any signal out of the transaction;
// at commit txexec first releases the deferred output, then takes the
// signal (and dies of it, as the command asked).
func TestOutputBeforeSignalToTxexec(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	require.NoError(t, err)
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := newCmd(ctx, t, transaction, command{Argv: []string{"sh", "-c", `echo before; kill $PPID; echo after`}, Dir: t.TempDir(),
		TxArgs: []string{"--output=defer"}})
	cmd.Stdout = out
	_ = cmd.Run()
	assert.Equal(t, 128+int(syscall.SIGTERM), statusOf(cmd.ProcessState))
	b, err := os.ReadFile(out.Name())
	require.NoError(t, err)
	assert.Equal(t, "before\nafter\n", string(b), "the output is released before the signal")
}
