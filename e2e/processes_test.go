package e2e

import (
	"context"
	"fmt"
	"io"
	"os/exec"
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

// TestProcessParity: process trees, groups, sessions, wait and exit
// statuses, pipelines and FIFOs behave under txexec as on Linux, and what
// every process of the tree wrote is committed.
func TestProcessParity(t *testing.T) {
	requireTools(t, "bash", "setsid", "seq", "sort")
	for _, p := range []parity{
		{name: "background children commit", argv: []string{"sh", "-c", `(echo a > x) & (echo b > y) & wait; cat x y`}},
		{name: "forks in a loop", argv: []string{"sh", "-c", `for i in 1 2 3 4 5 6 7 8; do (echo $i > f$i) & done; wait; cat f*`}},
		{name: "wait for a pid", argv: []string{"sh", "-c", `sleep 0.1 & wait $!; echo $?`}},
		{name: "exit statuses", argv: []string{"sh", "-c", `sh -c 'exit 7' & wait $!; echo $?; sh -c 'kill -TERM $$'; echo $?; (exit 300); echo $?`}},
		// bash's wait -n returns a job that ends while it waits, not one
		// that ended before (natively too: put a sleep before it and it
		// waits for the next), so each child ends only once the shell is
		// blocked in wait4 (w): otherwise the test would race the shell
		// (it lost about once in 100 runs).
		{name: "wait -n", argv: []string{"bash", "-c", blockedInWait +
			`mkfifo f; (read x < f; w; exit 4) & (w; exit 5) & wait -n; echo $?; echo go > f; wait -n; echo $?; rm f`}},
		{name: "waitid via bash wait -p", argv: []string{"bash", "-c", blockedInWait + `(w; exit 3) & p=$!; wait -n -p who; echo "$? $((who == p))"`}},
		{name: "setsid makes a session leader", argv: []string{"sh", "-c",
			`setsid --wait sh -c 'read -r pid comm state ppid pgrp sid rest < /proc/$$/stat; [ "$sid" = "$$" ] && [ "$pgrp" = "$$" ] && echo session-leader'`}},
		// bash's "[1]+ Done" notice depends on whether the job ends
		// before or during wait, natively too: stderr is not compared.
		{name: "job control gives a group", argv: []string{"bash", "-c",
			`exec 2>/dev/null; set -m; ( read -r pid comm state ppid pgrp rest < /proc/$BASHPID/stat; [ "$pgrp" = "$BASHPID" ] && echo own-group ) & wait`}},
		{name: "pipeline", argv: []string{"sh", "-c", `seq 1 20000 | sort -n | tail -1`}},
		{name: "pipeline into a file", argv: []string{"sh", "-c", `seq 1 20000 | sort -rn > out; head -1 out; wc -l < out`}},
		{name: "fifo made in the transaction", argv: []string{"sh", "-c", `mkfifo f; (seq 1 5000 > f &); sort -rn f | head -1; rm f`}},
		{name: "fifo made and kept", argv: []string{"sh", "-c", `mkfifo -m 640 keep; { echo through > keep & }; cat keep; ls -l keep | cut -c1-10`}},
		{name: "failing pipeline aborts", argv: []string{"sh", "-c", `echo x > written; seq 1 10 | false`}},
	} {
		t.Run(p.name, p.check)
	}
}

// blockedInWait defines w, a shell function that returns once the shell
// ($$) is blocked in wait4 (pid -1, no options): what bash's wait -n makes.
const blockedInWait = `w() { until awk '$1 == 61 && $4 == "0x0" { f = 1 } END { exit !f }' /proc/$$/syscall; do sleep 0.01; done; }; `

// TestProcessFifoMadeInTransaction: a FIFO made in the transaction works
// inside it, is not on the host before the commit, and is committed as an
// empty FIFO with its mode (the data left in it is dropped with its last
// descriptor, as natively); an abort leaves nothing.
func TestProcessFifoMadeInTransaction(t *testing.T) {
	script := `umask 022; mkfifo -m 640 f; exec 3<>f; echo through >&3; read -r got <&3; echo "$got"; echo unread >&3; echo made; read x; exit $x`
	for _, tc := range []struct {
		name   string
		status int
	}{{"commit", 0}, {"abort", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := startHeld(t, transaction, command{Argv: []string{"sh", "-c", script}, Dir: dir}, nil)
			assert.Equal(t, "through", h.lines.next(t), "the FIFO works inside; stderr:\n%s", h.stderr)
			require.Equal(t, "made", h.lines.next(t), "stderr:\n%s", h.stderr)
			f := filepath.Join(dir, "f")
			assert.NoFileExists(t, f, "not on the host before the commit")
			_, err := io.WriteString(h.in, strconv.Itoa(tc.status)+"\n")
			require.NoError(t, err)
			h.in.Close()
			err = h.cmd.Wait()
			assert.Equal(t, tc.status, statusOf(h.cmd.ProcessState), "%v; stderr:\n%s", err, h.stderr)
			if tc.status != 0 {
				assert.NoFileExists(t, f, "an abort leaves nothing")
				return
			}
			var st unix.Stat_t
			require.NoError(t, unix.Lstat(f, &st))
			assert.Equal(t, uint32(unix.S_IFIFO|0o640), st.Mode, "a FIFO with its mode")
			fd, err := unix.Open(f, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			require.NoError(t, err)
			defer unix.Close(fd)
			n, err := unix.Read(fd, make([]byte, 64))
			assert.NoError(t, err)
			assert.Zero(t, n, "empty: what was left unread in it is gone")
		})
	}
}

// startWatched starts txexec with stdin, stdout and stderr as pipes, the
// latter two read line by line; ctx bounds its run (it is killed, with its
// tree, when ctx is done).
func startWatched(ctx context.Context, t *testing.T, c command) (*exec.Cmd, io.WriteCloser, *lineReader, *lineReader) {
	t.Helper()
	cmd := newCmd(ctx, t, transaction, c)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	errp, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, in, newLineReader(out), newLineReader(errp)
}

// drain returns the rest of lr's lines. It fails the test when they have
// not ended (every writer gone) by the time ctx is done: what the test
// waits for did not happen in time, and waiting on would hang the suite.
func (lr *lineReader) drain(ctx context.Context, t *testing.T, what string) []string {
	t.Helper()
	var out []string
	for {
		select {
		case l, ok := <-lr.lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-ctx.Done():
			t.Fatalf("%s: not within the bound (%v); lines so far: %q", what, context.Cause(ctx), out)
		}
	}
}

var waitsFor = regexp.MustCompile(`^txexec: transaction [0-9]+ waits for pids ([0-9 ]+) \(still running after the command exited\)$`)

// TestProcessOutlivingTheCommand: a child that writes after the command
// exited is waited for, named once, and its write committed.
func TestProcessOutlivingTheCommand(t *testing.T) {
	dir := t.TempDir()
	// The child waits for the test, which goes on only once txexec has
	// said that it waits: so the child really outlives the command.
	script := `exec 3<&0; (read x <&3; echo late > z) & echo $!; exit 0`
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd, in, out, errs := startWatched(ctx, t, command{Argv: []string{"sh", "-c", script}, Dir: dir})
	child := out.next(t)
	m := waitsFor.FindStringSubmatch(errs.next(t))
	require.NotNil(t, m, "txexec says whom it waits for")
	assert.Equal(t, child, m[1], "it names the child")
	assert.NoFileExists(t, filepath.Join(dir, "z"))
	_, err := io.WriteString(in, "go\n")
	require.NoError(t, err)
	in.Close()
	rest := errs.drain(ctx, t, "txexec ends after the late child")
	require.NoError(t, cmd.Wait(), "stderr: %q", rest)
	assert.Empty(t, rest, "nothing more on stderr (the wait is reported once)")
	assert.Equal(t, "late\n", readString(t, filepath.Join(dir, "z")), "the late write is committed")
}

// TestProcessAbortKillsTree: when the transaction is bound to abort, the
// processes still running after the command exited are killed and txexec
// returns at once (the 1000 s sleeps would otherwise hold it): each case
// must be over within abortBound.
func TestProcessAbortKillsTree(t *testing.T) {
	const abortBound = 30 * time.Second
	sigtool := buildSigtool(t)
	for _, tc := range []struct {
		name   string
		script string
		args   []string
		// release: the tree waits for a line on stdin, sent after
		// txexec said it waits for it.
		release bool
		status  int
		reason  string
	}{
		{name: "command failed", script: `sleep 1000 & echo $!; exit 1`, status: 1,
			reason: "the command exited with status 1"},
		{name: "--on-exit=abort", script: `sleep 1000 & echo $!; exit 0`, args: []string{"--on-exit=abort"},
			reason: "--on-exit=abort"},
		{name: "doomed before the command exited", script: `sleep 1000 & echo $!; SIGTOOL send io_uring; exit 0`, status: -1,
			reason: "called io_uring_setup, which has no transactional meaning"},
		{name: "doomed after the command exited",
			script:  `exec 3<&0; (read x <&3; SIGTOOL send io_uring; sleep 1000 & echo $!; wait) & echo $!; exit 0`,
			release: true, status: -1, reason: "called io_uring_setup, which has no transactional meaning"},
		{name: "grandchildren in their own group and session", script: `setsid sh -c 'sleep 1000 & echo $!; wait' & sleep 1000 & echo $!; exit 1`, status: 1,
			reason: "the command exited with status 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := strings.ReplaceAll(tc.script, "SIGTOOL", sigtool)
			ctx, cancel := context.WithTimeout(context.Background(), abortBound)
			defer cancel()
			cmd, in, out, errs := startWatched(ctx, t, command{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), TxArgs: tc.args})
			var pids []int
			if tc.release {
				p, err := strconv.Atoi(out.next(t))
				require.NoError(t, err)
				pids = append(pids, p)
				require.Regexp(t, waitsFor, errs.next(t))
				_, err = io.WriteString(in, "go\n")
				require.NoError(t, err)
			}
			in.Close()
			for _, l := range out.drain(ctx, t, "the aborted tree is gone") {
				if p, err := strconv.Atoi(l); err == nil {
					pids = append(pids, p)
				} else {
					assert.Equal(t, "ENOTSUP", l, "the unsupported call fails")
				}
			}
			stderr := errs.drain(ctx, t, "txexec returns")
			err := cmd.Wait()
			require.NoError(t, ctx.Err(), "txexec returned within %v", abortBound)
			if err != nil {
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee)
			}
			switch tc.status {
			case -1:
				assert.NotZero(t, statusOf(cmd.ProcessState), "the transaction did not commit")
			default:
				assert.Equal(t, tc.status, statusOf(cmd.ProcessState))
			}
			require.NotEmpty(t, pids, "the tree said which pids it started")
			for _, p := range pids {
				st, ok := readProcStat(p)
				assert.True(t, !ok || st.State == 'Z' && st.Ppid == 1 || st.State == 'X',
					"pid %d of the aborted transaction is gone (state %c)", p, st.State)
				if ok && st.State != 'Z' {
					exec.Command("kill", "-9", strconv.Itoa(p)).Run()
				}
			}
			joined := strings.Join(stderr, "\n")
			assert.Regexp(t, `txexec: transaction [0-9]+ aborted: .*`+regexp.QuoteMeta(tc.reason), joined)
		})
	}
}

// TestProcessReachAround: calls that would reach a process outside the
// transaction are refused with a message naming the call and both pids;
// into the transaction's own processes they work as natively (ptrace
// excepted: txexec is the tracer). Calls without transactional meaning
// (io_uring, mount, open_by_handle_at) follow --unsupported, each policy
// with a message naming the call and the caller's pid.
func TestProcessReachAround(t *testing.T) {
	sigtool := buildSigtool(t)
	target := startSigTarget(t, sigtool, 0)
	p := strconv.Itoa(target.pid)
	const (
		noMeaning = `pid CALLER called %s, which has no transactional meaning`
		aborted   = `txexec: transaction [0-9]+ aborted: ` + noMeaning + ` \(see --unsupported\)`
		failed    = `txexec: ` + noMeaning + `; it fails with ENOTSUP \(--unsupported=error\)`
		allowed   = `txexec: warning: ` + noMeaning + `; running it anyway \(--unsupported=allow\)`
	)
	type reachCase struct {
		name string
		// call is what sigtool sends, from the process whose pid the
		// message names (CALLER); P is the target outside.
		call string
		args []string
		// stdout is the call's result; "" when it is the native one
		// (the call ran in the kernel).
		stdout string
		// doomed: the transaction aborts and f is not committed.
		doomed  bool
		message string
	}
	cases := []reachCase{
		{name: "process_vm_writev outside", call: `vmwritev P`, stdout: "EPERM",
			message: `txexec: refused process_vm_writev of pid CALLER into pid P, which is outside the transaction`},
		{name: "process_vm_writev inside", call: `vmwritev $$`, stdout: "EFAULT"},
		{name: "pidfd_getfd outside", call: `getfd P 0`, stdout: "EPERM",
			message: `txexec: refused pidfd_getfd of pid CALLER on pid P, which is outside the transaction`},
		{name: "pidfd_getfd inside", call: `getfd $$ 1`, stdout: "ok"},
		{name: "ptrace outside", call: `ptrace P`, stdout: "EPERM",
			message: `txexec: refused ptrace of pid CALLER on pid P, which is outside the transaction`},
		{name: "ptrace inside", call: `ptrace $$`, stdout: "EPERM",
			message: `txexec: refused ptrace of pid CALLER on pid CALLER: txexec is already its tracer, and nested tracing is not supported`},
	}
	for _, u := range []struct{ name, call, syscall string }{
		{"io_uring", "io_uring", "io_uring_setup"},
		// The kernel, when it runs them, fails both (no such mount
		// point, a stale handle), so nothing reaches the host.
		{"mount", "mount /nonexistent/txexec-reach-around", "mount"},
		{"open_by_handle_at", "open_by_handle", "open_by_handle_at"},
	} {
		cases = append(cases,
			reachCase{name: u.name + " aborts by default", call: u.call, stdout: "ENOTSUP", doomed: true,
				message: fmt.Sprintf(aborted, u.syscall)},
			reachCase{name: u.name + " fails under --unsupported=error", call: u.call, args: []string{"--unsupported=error"}, stdout: "ENOTSUP",
				message: fmt.Sprintf(failed, u.syscall)},
			reachCase{name: u.name + " runs under --unsupported=allow", call: u.call, args: []string{"--unsupported=allow"},
				message: fmt.Sprintf(allowed, u.syscall)})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// exec: the shell's pid is the caller's.
			script := "echo x > f; echo $$; exec " + sigtool + " send " + strings.ReplaceAll(tc.call, "P", p)
			got := run(t, transaction, command{Argv: []string{"sh", "-c", script}, Dir: dir, TxArgs: tc.args})
			lines := strings.Split(strings.TrimSuffix(got.Stdout, "\n"), "\n")
			require.Len(t, lines, 2, "the caller's pid and the call's result; stderr:\n%s", got.Stderr)
			caller := lines[0]
			want := tc.stdout
			if want == "" {
				nat := run(t, native, command{Argv: []string{"sh", "-c", script}, Dir: t.TempDir()})
				want = nat.Stdout[strings.Index(nat.Stdout, "\n")+1:]
				want = strings.TrimSuffix(want, "\n")
				assert.NotEqual(t, "ENOTSUP", want)
			}
			assert.Equal(t, want, lines[1], "the call's result")
			if tc.doomed {
				assert.NotZero(t, got.Status, "the transaction did not commit; stderr:\n%s", got.Stderr)
				assert.NoFileExists(t, filepath.Join(dir, "f"))
			} else {
				assert.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
				assert.FileExists(t, filepath.Join(dir, "f"))
			}
			if tc.message != "" {
				re := strings.NewReplacer("CALLER", caller, " P,", " "+p+",").Replace(tc.message)
				assert.Regexp(t, `(?m)^`+re+`$`, got.Stderr)
			} else {
				assert.NotContains(t, got.Stderr, "txexec:", "nothing to say")
			}
		})
	}
	assert.Equal(t, "none", target.pending(t))
}

// TestProcessMemOfOutsider: opening /proc/PID/mem for writing reaches into
// a process as process_vm_writev does: refused (per --unsupported) for a
// process outside the transaction, with a message naming both pids; for
// the caller itself and another process of the transaction it works.
func TestProcessMemOfOutsider(t *testing.T) {
	requireTools(t, "python3")
	sigtool := buildSigtool(t)
	target := startSigTarget(t, sigtool, 0)
	p := strconv.Itoa(target.pid)
	const open = `import os, sys
for pid in sys.argv[1:]:
    try:
        os.close(os.open("/proc/%s/mem" % pid, os.O_RDWR))
        print("ok")
    except OSError as e:
        print(e.strerror)
`
	got := run(t, transaction, command{Argv: []string{"python3", "-c", open, p}, Dir: t.TempDir(), TxArgs: []string{"--unsupported=error"}})
	assert.Equal(t, "Operation not supported\n", got.Stdout)
	assert.Regexp(t, `(?m)^txexec: pid [0-9]+ called openat: writing the memory of pid `+p+`, outside the transaction, through /proc/`+p+`/mem`, got.Stderr)

	got = run(t, transaction, command{Argv: []string{"python3", "-c", open, p}, Dir: t.TempDir()})
	assert.NotEqual(t, 0, got.Status)
	assert.Regexp(t, `txexec: transaction [0-9]+ aborted: pid [0-9]+ called openat: writing the memory of pid `+p, got.Stderr)

	inside := `sleep 5 & python3 -c '` + open + `' self $!; kill $!; wait`
	got = run(t, transaction, command{Argv: []string{"sh", "-c", inside}, Dir: t.TempDir()})
	assert.Equal(t, 0, got.Status, got.Stderr)
	assert.Equal(t, "ok\nok\n", got.Stdout)
	assert.NotContains(t, got.Stderr, "txexec:")
	assert.Equal(t, "none", target.pending(t))
}
