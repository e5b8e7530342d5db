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
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// sigTarget is a process outside every transaction (testdata/sigtool.c,
// "target"): it blocks SIGUSR1, SIGUSR2 and SIGRTMIN+1, so a signal sent
// to it stays pending, and it reports its pending set on request. A
// natively sent signal is pending as soon as kill(2) returns, so "not
// pending yet" is a deterministic observation, not a race.
type sigTarget struct {
	pid   int
	in    io.WriteCloser
	lines *lineReader
}

// startSigTarget starts the target; pgid, if not 0, is the process group it
// joins.
func startSigTarget(t *testing.T, sigtool string, pgid int) *sigTarget {
	t.Helper()
	cmd := exec.Command(sigtool, "target")
	if pgid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	}
	st := &sigTarget{}
	st.pid, st.in, st.lines = startSigtool(t, cmd)
	return st
}

// startSigtool starts a sigtool process, killed when the test ends, and
// waits for its "ready PID" line: its pid, its stdin and its stdout.
func startSigtool(t *testing.T, cmd *exec.Cmd) (int, io.WriteCloser, *lineReader) {
	t.Helper()
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := newLineReader(out)
	ready := lines.next(t)
	var pid int
	_, err = fmt.Sscanf(ready, "ready %d", &pid)
	require.NoError(t, err, "%s said %q", cmd.Args[1], ready)
	return pid, in, lines
}

// pending returns the target's pending signals, "none" if there are none.
func (s *sigTarget) pending(t *testing.T) string {
	t.Helper()
	_, err := io.WriteString(s.in, "pending\n")
	require.NoError(t, err)
	return strings.TrimPrefix(s.lines.next(t), "pending ")
}

// take consumes the pending signals and describes each one.
func (s *sigTarget) take(t *testing.T) []string {
	t.Helper()
	_, err := io.WriteString(s.in, "take\n")
	require.NoError(t, err)
	var out []string
	for l := s.lines.next(t); l != "end"; l = s.lines.next(t) {
		out = append(out, l)
	}
	return out
}

func buildSigtool(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	openToOthers(t, dir)
	return buildC(t, dir, "sigtool", "sigtool")
}

// heldRun is a run that stops in the middle: its command prints lines the
// test reads, then waits for a line on stdin.
type heldRun struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  *lineReader
	stderr *strings.Builder
}

func startHeld(t *testing.T, m mode, c command, sysAttr *syscall.SysProcAttr) *heldRun {
	t.Helper()
	cmd := newCmd(context.Background(), t, m, c)
	cmd.SysProcAttr = sysAttr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	h := &heldRun{cmd: cmd, in: in, stderr: &strings.Builder{}}
	cmd.Stderr = h.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	h.lines = newLineReader(out)
	return h
}

// release writes a line to the command's stdin and waits for the end:
// the rest of stdout and the exit status.
func (h *heldRun) release(t *testing.T) ([]string, int) {
	t.Helper()
	_, err := io.WriteString(h.in, "go\n")
	require.NoError(t, err)
	h.in.Close()
	var rest []string
	for l := range h.lines.lines {
		rest = append(rest, l)
	}
	err = h.cmd.Wait()
	var ee *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &ee, "stderr:\n%s", h.stderr.String())
	}
	return rest, statusOf(h.cmd.ProcessState)
}

var droppedSignals = regexp.MustCompile(`(?m)^txexec: dropped ([0-9]+) signals? sent out of aborted transaction [0-9]+$`)

// TestSignalOutsideDeferredUntilCommit: a signal sent from the transaction
// to a process outside it is pending at the target only after the commit
// (never after an abort), with --signals=immediate at once, and natively at
// once. Every call of the kill family is covered; the siginfo of the
// sigqueue calls arrives as sent.
func TestSignalOutsideDeferredUntilCommit(t *testing.T) {
	sigtool := buildSigtool(t)
	calls := []struct {
		name string
		// args are sigtool send's arguments; P is replaced by the
		// target's pid.
		args string
		sig  int
		// taken is what the target reads from the signal natively and
		// after commit ("" when it differs in the sender only).
		taken string
	}{
		{"kill", "kill P 10", 10, "sig=10 code=0 value=0"},
		{"tkill", "tkill P 12", 12, "sig=12 code=0 value=0"},
		{"tgkill", "tgkill P P 10", 10, "sig=10 code=0 value=0"},
		{"rt_sigqueueinfo", "sigqueue P 12 42", 12, "sig=12 code=-1 value=42"},
		{"rt_tgsigqueueinfo", "tgsigqueue P P 10 7", 10, "sig=10 code=-1 value=7"},
		{"pidfd_send_signal", "pidfd P 10", 10, "sig=10 code=0 value=0"},
		{"pidfd_send_signal with info", "pidfd-info P 12 9", 12, "sig=12 code=-1 value=9"},
		{"realtime signal", "kill P 35", 35, "sig=35 code=0 value=0"},
	}
	outcomes := []struct {
		name string
		m    mode
		args []string
		// exit is the command's status after release.
		exit int
		// before/after: whether the signal is pending while the command
		// waits, and after txexec has exited.
		before, after bool
	}{
		{"native", native, nil, 0, true, true},
		{"commit", transaction, nil, 0, false, true},
		{"abort by status", transaction, nil, 1, false, false},
		{"abort by option", transaction, []string{"--on-exit=abort"}, 0, false, false},
		{"immediate", transaction, []string{"--signals=immediate"}, 0, true, true},
		{"immediate then abort", transaction, []string{"--signals=immediate"}, 1, true, true},
	}
	for _, call := range calls {
		for _, oc := range outcomes {
			t.Run(call.name+"/"+oc.name, func(t *testing.T) {
				target := startSigTarget(t, sigtool, 0)
				p := strconv.Itoa(target.pid)
				args := strings.ReplaceAll(call.args, "P", p)
				script := fmt.Sprintf(`%s send %s; echo sent; read x; exit %d`, sigtool, args, oc.exit)
				h := startHeld(t, oc.m, command{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), TxArgs: oc.args}, nil)
				require.Equal(t, "ok", h.lines.next(t), "the call succeeds; stderr:\n%s", h.stderr)
				require.Equal(t, "sent", h.lines.next(t))
				want := "none"
				if oc.before {
					want = strconv.Itoa(call.sig)
				}
				assert.Equal(t, want, target.pending(t), "pending while the transaction runs")
				_, status := h.release(t)
				assert.Equal(t, oc.exit, status, "stderr:\n%s", h.stderr)
				want = "none"
				if oc.after {
					want = strconv.Itoa(call.sig)
				}
				assert.Equal(t, want, target.pending(t), "pending after txexec exited")
				if oc.after {
					assert.Equal(t, []string{call.taken}, target.take(t), "what the target reads")
				}
				dropped := droppedSignals.FindStringSubmatch(h.stderr.String())
				if oc.m == transaction && !oc.after {
					if assert.NotNil(t, dropped, "abort says it dropped the signal; stderr:\n%s", h.stderr) {
						assert.Equal(t, "1", dropped[1])
					}
				} else {
					assert.Nil(t, dropped, "nothing dropped; stderr:\n%s", h.stderr)
				}
			})
		}
	}
}

// sigReceiver is a process outside every transaction (testdata/sigtool.c,
// "receiver") that handles USR1, USR2 and SIGRTMIN+1 and records, for each
// signal in the order handled, its siginfo and what a file held when the
// handler ran.
type sigReceiver struct {
	pid   int
	in    io.WriteCloser
	lines *lineReader
}

func startSigReceiver(t *testing.T, sigtool, file string) *sigReceiver {
	t.Helper()
	r := &sigReceiver{}
	r.pid, r.in, r.lines = startSigtool(t, exec.Command(sigtool, "receiver", file))
	return r
}

// report returns what the receiver has handled so far. Every signal sent to
// it before the call is handled by then: it handles pending signals before
// it reads the request.
func (r *sigReceiver) report(t *testing.T) []string {
	t.Helper()
	_, err := io.WriteString(r.in, "report\n")
	require.NoError(t, err)
	out := []string{}
	for l := r.lines.next(t); l != "end"; l = r.lines.next(t) {
		out = append(out, l)
	}
	return out
}

// TestSignalOutsideOrderAfterCommit: several signals sent from the
// transaction to a process outside it, by different calls, reach it in the
// order sent, with their values, only after the commit, and when it handles
// the first one the transaction's file is already on the host; after an
// abort none arrives. The kernel hands a process its pending signals
// lowest number first, so the order sent can only be seen within one
// signal number: all but the first (SIGUSR1, which is also the lowest) are
// SIGRTMIN+1, whose instances the kernel queues in order, told apart by
// si_code and value.
func TestSignalOutsideOrderAfterCommit(t *testing.T) {
	sigtool := buildSigtool(t)
	const rt = "35" // SIGRTMIN+1 under glibc
	sends := []string{"kill P 10", "sigqueue P " + rt + " 1", "kill P " + rt, "sigqueue P " + rt + " 2",
		"pidfd-info P " + rt + " 3", "pidfd P " + rt, "sigqueue P " + rt + " 4", "sigqueue P " + rt + " 5"}
	received := []string{
		"sig=10 code=0 value=0 file=committed",
		"sig=35 code=-1 value=1 file=committed",
		"sig=35 code=0 value=0 file=committed",
		"sig=35 code=-1 value=2 file=committed",
		"sig=35 code=-1 value=3 file=committed",
		"sig=35 code=0 value=0 file=committed",
		"sig=35 code=-1 value=4 file=committed",
		"sig=35 code=-1 value=5 file=committed",
	}
	for _, tc := range []struct {
		name string
		m    mode
		exit int
		// before and after: what the receiver handled while the command
		// waits, and after txexec exited.
		before, after []string
	}{
		{"native", native, 0, received, received},
		{"commit", transaction, 0, []string{}, received},
		{"abort", transaction, 1, []string{}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "file")
			r := startSigReceiver(t, sigtool, file)
			p := strconv.Itoa(r.pid)
			var script strings.Builder
			script.WriteString("echo committed > file")
			for _, s := range sends {
				fmt.Fprintf(&script, "; %s send %s >&2", sigtool, strings.ReplaceAll(s, "P", p))
			}
			fmt.Fprintf(&script, "; echo sent; read x; exit %d", tc.exit)
			h := startHeld(t, tc.m, command{Argv: []string{"sh", "-c", script.String()}, Dir: dir}, nil)
			require.Equal(t, "sent", h.lines.next(t), "stderr:\n%s", h.stderr)
			assert.Equal(t, tc.before, r.report(t), "handled while the transaction runs")
			_, status := h.release(t)
			assert.Equal(t, tc.exit, status, "stderr:\n%s", h.stderr)
			assert.Equal(t, strings.Repeat("ok\n", len(sends)), strings.Join(grepLines(h.stderr.String(), "ok"), ""),
				"every call succeeded; stderr:\n%s", h.stderr)
			assert.Equal(t, tc.after, r.report(t), "handled after txexec exited, in the order sent")
			if tc.exit != 0 {
				assert.NoFileExists(t, file)
				dropped := droppedSignals.FindStringSubmatch(h.stderr.String())
				if assert.NotNil(t, dropped, "abort says it dropped the signals; stderr:\n%s", h.stderr) {
					assert.Equal(t, strconv.Itoa(len(sends)), dropped[1])
				}
			}
		})
	}
}

// grepLines returns the lines of s equal to want, each with its newline.
func grepLines(s, want string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.TrimSuffix(l, "\n") == want {
			out = append(out, l)
		}
	}
	return out
}

// TestSignalOutsideErrors: what the caller sees from a signal to an
// outsider is what Linux answers — checked by txexec, with nothing queued
// when the call fails or only checks existence.
func TestSignalOutsideErrors(t *testing.T) {
	sigtool := buildSigtool(t)
	requireTools(t, "setpriv")
	testenv.NeedRoot(t, "txexec supervises as root")
	nobody := "setpriv --reuid=65534 --regid=65534 --clear-groups "
	for _, tc := range []struct {
		name, args, want string
	}{
		{"existence check", "kill P 0", "ok"},
		{"no such process", "kill 2147483647 10", "ESRCH"},
		{"no such thread", "tkill 2147483647 10", "ESRCH"},
		{"tgkill thread not in group", "tgkill 1 P 10", "ESRCH"},
		{"invalid signal", "kill P 65", "EINVAL"},
		{"tkill of pid 0", "tkill 0 10", "EINVAL"},
		{"sigqueue impersonating kill", "sigqueue-code P 12 0", "EPERM"},
		{"sigqueue to nobody", "sigqueue 2147483647 12 1", "ESRCH"},
		{"unprivileged to root", nobody + "SIGTOOL send kill P 10", "EPERM"},
		{"unprivileged existence check of root", nobody + "SIGTOOL send kill P 0", "EPERM"},
		{"unprivileged SIGCONT in the same session", nobody + "SIGTOOL send kill P 18", "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range []mode{native, transaction} {
				target := startSigTarget(t, sigtool, 0)
				p := strconv.Itoa(target.pid)
				args := strings.ReplaceAll(tc.args, "P", p)
				cmdline := sigtool + " send " + args
				if strings.Contains(args, "SIGTOOL") {
					cmdline = strings.ReplaceAll(args, "SIGTOOL", sigtool)
				}
				got := run(t, m, command{Argv: []string{"sh", "-c", cmdline}, Dir: t.TempDir()})
				assert.Equal(t, 0, got.Status, "%s: stderr:\n%s", m, got.Stderr)
				assert.Equal(t, tc.want+"\n", got.Stdout, "%s: the call's result", m)
				assert.Equal(t, "none", target.pending(t), "%s: nothing pending afterwards", m)
				assert.NotContains(t, got.Stderr, "dropped", "%s", m)
			}
		})
	}
}

// TestSignalProcessGroupMixed: kill(0) from the transaction reaches its own
// processes at once and a process outside it in the same process group
// only at commit; txexec itself, in that group too, is spared.
func TestSignalProcessGroupMixed(t *testing.T) {
	sigtool := buildSigtool(t)
	for _, tc := range []struct {
		name   string
		m      mode
		exit   int
		before string
		after  string
	}{
		{"native", native, 0, "10", "10"},
		{"commit", transaction, 0, "none", "10"},
		{"abort", transaction, 1, "none", "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := fmt.Sprintf(`trap 'echo got-usr1' USR1; read x; kill -USR1 0; echo sent; read x; exit %d`, tc.exit)
			// Its own process group, which the outsider then joins.
			h := startHeld(t, tc.m, command{Argv: []string{"sh", "-c", script}, Dir: t.TempDir()},
				&syscall.SysProcAttr{Setpgid: true})
			target := startSigTarget(t, sigtool, h.cmd.Process.Pid)
			_, err := io.WriteString(h.in, "go\n")
			require.NoError(t, err)
			var seen []string
			for l := h.lines.next(t); l != "sent"; l = h.lines.next(t) {
				seen = append(seen, l)
			}
			assert.Equal(t, []string{"got-usr1"}, seen, "the shell, inside, got the signal at once; stderr:\n%s", h.stderr)
			assert.Equal(t, tc.before, target.pending(t), "the outsider while the transaction runs")
			_, status := h.release(t)
			assert.Equal(t, tc.exit, status, "txexec survived its own process group's signal; stderr:\n%s", h.stderr)
			assert.Equal(t, tc.after, target.pending(t), "the outsider afterwards")
		})
	}
}

// TestSignalInsideImmediate: signals between processes of the transaction
// are delivered at once, with the kernel's exact semantics (here: the
// child's death by SIGTERM as its parent sees it, and a handler in a
// sibling), and nothing is queued.
func TestSignalInsideImmediate(t *testing.T) {
	script := `sleep 1000 & p=$!; kill -TERM $p; wait $p; echo "status $?"
sh -c 'trap "echo trapped; exit 3" USR2; echo ready; while :; do sleep 1; done' > fifo &
q=$!
read line < fifo && echo "child $line"
kill -USR2 $q; wait $q; echo "status $?"`
	parity{
		name:  "kill inside",
		argv:  []string{"sh", "-c", "mkfifo fifo; exec 3<>fifo; " + script + "; rm fifo"},
		setup: func(t *testing.T, dir string) {},
	}.check(t)
}
