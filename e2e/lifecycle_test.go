package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// TestExitStatus: txexec exits with the command's status, 128+N for death by
// signal N, and 127 with one "txexec:" line when the command does not exist.
func TestExitStatus(t *testing.T) {
	segv := buildC(t, t.TempDir(), "segv", "segv")
	cases := []struct {
		name string
		argv []string
		want int
	}{
		{"exit 7", []string{"sh", "-c", "exit 7"}, 7},
		{"exit 0", []string{"sh", "-c", "exit 0"}, 0},
		{"kill -TERM $$", []string{"sh", "-c", "kill -TERM $$"}, 128 + int(unix.SIGTERM)},
		{"kill -KILL $$", []string{"sh", "-c", "kill -KILL $$"}, 128 + int(unix.SIGKILL)},
		{"segfault", []string{"sh", "-c", "ulimit -c 0; exec " + segv}, 128 + int(unix.SIGSEGV)},
		{"exit 255", []string{"sh", "-c", "exit 255"}, 255},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			want := run(t, native, command{Argv: c.argv, Dir: dir})
			require.Equal(t, c.want, want.Status, "native status")
			for _, m := range underTxexec {
				got := run(t, m, command{Argv: c.argv, Dir: dir})
				assert.Equal(t, c.want, got.Status, "%s: status; stderr:\n%s", m, got.Stderr)
				stderr := got.Stderr
				if m == transaction && c.want != 0 {
					stderr = withoutAbortLine(t, stderr, c.want)
				}
				assert.Equal(t, want.Stderr, stderr, "%s: stderr", m)
				assert.Equal(t, want.Stdout, got.Stdout, "%s: stdout", m)
			}
		})
	}
	t.Run("command not found", func(t *testing.T) {
		const name = "no-such-command-txexec-e2e"
		dir := t.TempDir()
		shell := run(t, native, command{Argv: []string{"sh", "-c", name}, Dir: dir})
		require.Equal(t, 127, shell.Status, "a shell's status for a missing command")
		for _, argv0 := range []string{name, "./" + name, "/nonexistent-dir-txexec-e2e/" + name} {
			for _, m := range underTxexec {
				got := run(t, m, command{Argv: []string{argv0, "arg"}, Dir: dir})
				assert.Equal(t, 127, got.Status, "%s %s: status", m, argv0)
				assert.Empty(t, got.Stdout, "%s %s: stdout", m, argv0)
				lines := strings.Split(strings.TrimSuffix(got.Stderr, "\n"), "\n")
				if assert.Len(t, lines, 1, "%s %s: exactly one line on stderr: %q", m, argv0, got.Stderr) {
					assert.True(t, strings.HasPrefix(lines[0], "txexec: "), "%s: %q starts with txexec:", m, lines[0])
					assert.Contains(t, lines[0], argv0, "%s: the line names the command", m)
				}
			}
		}
	})
}

// startTxexec starts c in mode m with stdout as a pipe of lines; the caller
// waits for it.
func startTxexec(t *testing.T, m mode, c command) (*exec.Cmd, *lineReader, *bytes.Buffer) {
	t.Helper()
	cmd := newCmd(context.Background(), t, m, c)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		// Never leave a tree behind, whatever the test did.
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, newLineReader(stdout), &stderr
}

// proc identifies one process over time (pid plus start time, so that a
// recycled pid is not mistaken for it).
type proc struct {
	pid   int
	start uint64
}

func procOf(t *testing.T, pid int) proc {
	t.Helper()
	st, ok := readProcStat(pid)
	require.True(t, ok, "process %d exists", pid)
	return proc{pid, st.StartTime}
}

// alive reports whether p still exists and is not a zombie.
func (p proc) alive() bool {
	st, ok := readProcStat(p.pid)
	return ok && st.StartTime == p.start && st.State != 'Z' && st.State != 'X'
}

// TestTreeDiesWithTxexec: SIGKILL of txexec while the tree runs kills every
// process of the tree.
func TestTreeDiesWithTxexec(t *testing.T) {
	script := `sleep 100 & echo $!; (sleep 100; echo never) & echo $!; sh -c 'sleep 100' & echo $!; echo $$; wait`
	for _, m := range underTxexec {
		t.Run(m.String(), func(t *testing.T) {
			cmd, out, stderr := startTxexec(t, m, command{Argv: []string{"sh", "-c", script}, Dir: t.TempDir()})
			var tree []proc
			for i := 0; i < 4; i++ {
				pid, err := strconv.Atoi(out.next(t))
				require.NoError(t, err)
				tree = append(tree, procOf(t, pid))
			}
			// Wait until the grandchild sleeps exist too (sh -c 'sleep')
			// and collect every descendant of txexec.
			waitFor(t, "the tree's sleeps to start", func() bool {
				return len(descendants(t, cmd.Process.Pid)) >= 5
			})
			for _, pid := range descendants(t, cmd.Process.Pid) {
				if st, ok := readProcStat(pid); ok {
					tree = append(tree, proc{pid, st.StartTime})
				}
			}
			require.NoError(t, cmd.Process.Signal(unix.SIGKILL))
			err := cmd.Wait()
			require.Error(t, err)
			assert.Equal(t, 128+int(unix.SIGKILL), statusOf(cmd.ProcessState), "txexec itself was killed")
			for _, p := range tree {
				waitFor(t, fmt.Sprintf("process %d of the tree to die", p.pid), func() bool { return !p.alive() })
			}
			assert.NotContains(t, stderr.String(), "never")
		})
	}
}

// descendants lists the processes below pid (by parent pid).
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	children := map[int][]int{}
	for _, p := range allPids(t) {
		if st, ok := readProcStat(p); ok {
			children[st.Ppid] = append(children[st.Ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// TestNoZombiesOrStrays: the shell in the tree reaps its children itself
// (the tracer does not steal their exit), and txexec returns only after every
// process of the tree has exited, orphans included.
func TestNoZombiesOrStrays(t *testing.T) {
	script := `for i in $(seq 30); do (true) & done; wait
(sleep 0.5 >/dev/null & echo $!)
echo ready; read x; echo "got $x"`
	for _, m := range append([]mode{native}, underTxexec...) {
		t.Run(m.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := newCmd(ctx, t, m, command{Argv: []string{"sh", "-c", script}, Dir: t.TempDir()})
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			out := newLineReader(stdout)
			orphanPid, err := strconv.Atoi(out.next(t))
			require.NoError(t, err)
			orphan, orphanSeen := proc{pid: orphanPid}, false
			if st, ok := readProcStat(orphanPid); ok {
				orphan.start, orphanSeen = st.StartTime, true
			}
			require.Equal(t, "ready", out.next(t))
			// The shell has waited for its 30 children: none of them may
			// linger as a zombie below txexec.
			for _, pid := range descendants(t, cmd.Process.Pid) {
				st, ok := readProcStat(pid)
				if ok && st.State == 'Z' {
					t.Errorf("%s: zombie %d (parent %d) in the tree", m, pid, st.Ppid)
				}
			}
			_, err = io.WriteString(stdin, "go\n")
			require.NoError(t, err)
			require.NoError(t, stdin.Close())
			assert.Equal(t, "got go", out.next(t))
			require.NoError(t, cmd.Wait())
			if m != native && orphanSeen {
				// Checked at once, not polled: txexec must not return
				// while a process of its tree still runs.
				assert.False(t, orphan.alive(), "%s: the orphaned sleep %d still runs after txexec returned", m, orphanPid)
			}
		})
	}
}

// TestStdioUntouched: the command's stdin, stdout and stderr are txexec's
// own descriptors: a pipe into txexec reaches the command, and the command's
// stdout and stderr are the very files txexec was given.
func TestStdioUntouched(t *testing.T) {
	script := `cat; readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2; stat -L -c '%d:%i' /proc/self/fd/1; echo to-stderr >&2`
	for _, m := range append([]mode{native}, underTxexec...) {
		t.Run(m.String(), func(t *testing.T) {
			dir := t.TempDir()
			outPath, errPath := filepath.Join(dir, "stdout.txt"), filepath.Join(dir, "stderr.txt")
			outF, err := os.Create(outPath)
			require.NoError(t, err)
			defer outF.Close()
			errF, err := os.Create(errPath)
			require.NoError(t, err)
			defer errF.Close()
			pr, pw, err := os.Pipe()
			require.NoError(t, err)
			defer pr.Close()
			var pipeSt unix.Stat_t
			require.NoError(t, unix.Fstat(int(pr.Fd()), &pipeSt))
			var outSt unix.Stat_t
			require.NoError(t, unix.Fstat(int(outF.Fd()), &outSt))

			cmd := newCmd(context.Background(), t, m, command{Argv: []string{"sh", "-c", script}, Dir: dir})
			cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, outF, errF
			require.NoError(t, cmd.Start())
			_, err = io.WriteString(pw, "through the pipe\n")
			require.NoError(t, err)
			require.NoError(t, pw.Close())
			require.NoError(t, cmd.Wait())

			b, err := os.ReadFile(outPath)
			require.NoError(t, err)
			want := fmt.Sprintf("through the pipe\npipe:[%d]\n%s\n%s\n%d:%d\n", pipeSt.Ino, outPath, errPath, outSt.Dev, outSt.Ino)
			assert.Equal(t, want, string(b))
			b, err = os.ReadFile(errPath)
			require.NoError(t, err)
			assert.Equal(t, "to-stderr\n", string(b))
		})
	}
}

// TestSignalsReachCommand: SIGTERM and SIGHUP sent to txexec reach the
// command, which handles them as it would without txexec.
func TestSignalsReachCommand(t *testing.T) {
	loop := `echo ready; while :; do sleep 0.05; done`
	cases := []struct {
		name   string
		script string
		sig    unix.Signal
		want   int
		stdout string
	}{
		{"TERM trapped", `trap 'echo got TERM; exit 5' TERM; ` + loop, unix.SIGTERM, 5, "got TERM"},
		{"TERM default", loop, unix.SIGTERM, 128 + int(unix.SIGTERM), ""},
		{"HUP default", loop, unix.SIGHUP, 128 + int(unix.SIGHUP), ""},
	}
	for _, c := range cases {
		for _, m := range append([]mode{native}, underTxexec...) {
			t.Run(c.name+"/"+m.String(), func(t *testing.T) {
				// A shell keeps ignoring what it was started ignoring
				// (nohup's SIGHUP, a background job's SIGINT), and so
				// would the test's own children: env resets the signals
				// under test, natively and under txexec alike.
				argv := []string{"env", "--default-signal=HUP,TERM", "sh", "-c", c.script}
				cmd, out, stderr := startTxexec(t, m, command{Argv: argv, Dir: t.TempDir()})
				require.Equal(t, "ready", out.next(t))
				require.NoError(t, cmd.Process.Signal(c.sig))
				// Bounded: a signal that does not end the command fails
				// the test instead of hanging the suite.
				stuck := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
				var rest []string
				for l := range out.lines {
					rest = append(rest, l)
				}
				cmd.Wait()
				require.True(t, stuck.Stop(), "%v did not end the command within a minute", c.sig)
				st := statusOf(cmd.ProcessState)
				if m == transaction && c.want != 0 {
					withoutAbortLine(t, stderr.String(), c.want)
				}
				assert.Equal(t, c.want, st, "status; stderr:\n%s", stderr.String())
				assert.Equal(t, c.stdout, strings.Join(rest, "\n"))
				if m != native {
					assert.True(t, cmd.ProcessState.Exited(), "txexec survives the signal and reports the command's status")
				}
			})
		}
	}
}

// pty is a pseudo-terminal pair; the test types on the master side.
type pty struct {
	master, slave *os.File
	mu            sync.Mutex
	// out is everything read from the master, and seen how much of it
	// expect has consumed. Guarded by mu.
	out  bytes.Buffer
	seen int
}

func openPty(t *testing.T) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		testenv.SkipOrFail(t, "no pseudo-terminals: %v", err)
	}
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	p := &pty{master: m, slave: s}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { m.Close(); s.Close() })
	return p
}

// expect waits until s appears in the terminal's output after what earlier
// expects consumed, and consumes up to its end.
func (p *pty) expect(t *testing.T, s string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%q on the terminal (output so far: %q)", s, p.output()), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		i := strings.Index(p.out.String()[p.seen:], s)
		if i < 0 {
			return false
		}
		p.seen += i + len(s)
		return true
	})
}

func (p *pty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *pty) typeIn(t *testing.T, s string) {
	t.Helper()
	_, err := p.master.WriteString(s)
	require.NoError(t, err)
}

// foreground is the terminal's foreground process group.
func (p *pty) foreground(t *testing.T) int {
	t.Helper()
	pgrp, err := unix.IoctlGetInt(int(p.master.Fd()), unix.TIOCGPGRP)
	require.NoError(t, err)
	return pgrp
}

// startShell starts an interactive bash (job control on) as the session
// leader of the pty, as a terminal emulator would.
func startShell(t *testing.T, p *pty) *exec.Cmd {
	t.Helper()
	requireTools(t, "bash")
	cmd := newCmd(context.Background(), t, native, command{
		// As from a terminal emulator: no signal ignored on entry
		// (the test itself may have been started with some ignored).
		Argv: []string{"env", "--default-signal", "bash", "--norc", "--noprofile", "-i"},
		Dir:  t.TempDir(),
		Env:  []string{"PS1=e2e$ ", "PS2=", "TERM=dumb", "HISTFILE=/dev/null"},
	})
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.slave, p.slave, p.slave
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
			for _, pid := range descendants(t, cmd.Process.Pid) {
				unix.Kill(pid, unix.SIGKILL)
			}
			cmd.Wait()
		}
	})
	p.expect(t, "e2e$ ")
	return cmd
}

// jobProc waits for the process whose argv[0] is name in the shell's
// session, in a process group other than the shell's (the job), blocked.
func jobProc(t *testing.T, shell int, name string) (pid, pgrp int) {
	t.Helper()
	waitFor(t, name+" to run as a job and block", func() bool {
		for _, d := range descendants(t, shell) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", d))
			st, ok := readProcStat(d)
			argv0, _, _ := strings.Cut(string(b), "\x00")
			if err == nil && ok && argv0 == name && st.Pgrp != shell && st.State == 'S' {
				pid, pgrp = d, st.Pgrp
				return true
			}
		}
		return false
	})
	return pid, pgrp
}

// shellWords quotes argv for the shell.
func shellWords(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// echoStatus makes the shell print $?; the quotes keep the echo of the
// typed line from matching what expect waits for.
const echoStatus = `echo "st""atus=$?"` + "\n"

// TestJobControl drives an interactive bash on a pseudo-terminal, as a user
// would: Ctrl-C interrupts the job (status 130) and txexec survives to
// report it; Ctrl-Z stops the job (bash reports it "Stopped", $? = 148, as
// without txexec) and fg resumes it to completion.
func TestJobControl(t *testing.T) {
	for _, m := range append([]mode{native}, underTxexec...) {
		t.Run("Ctrl-C/"+m.String(), func(t *testing.T) {
			p := openPty(t)
			shell := startShell(t, p)
			p.typeIn(t, shellWords(argvFor(m, command{Argv: []string{"sleep", "100"}}))+"\n")
			_, pgrp := jobProc(t, shell.Process.Pid, "sleep")
			assert.Equal(t, pgrp, p.foreground(t), "the job is the terminal's foreground group")
			p.typeIn(t, "\x03") // ^C: SIGINT to the foreground group
			p.expect(t, "e2e$ ")
			p.typeIn(t, echoStatus)
			p.expect(t, "status=130")
			if m == transaction {
				assert.Regexp(t, `txexec: transaction [0-9]+ aborted: the command exited with status 130`, p.output())
			}
			p.typeIn(t, "exit\n")
			require.NoError(t, shell.Wait())
		})
		t.Run("Ctrl-Z and fg/"+m.String(), func(t *testing.T) {
			p := openPty(t)
			shell := startShell(t, p)
			argv := argvFor(m, command{Argv: []string{"sh", "-c", `read line; echo "go""t $line"`}})
			p.typeIn(t, shellWords(argv)+"\n")
			sh, pgrp := jobProc(t, shell.Process.Pid, "sh")
			p.typeIn(t, "\x1a") // ^Z: SIGTSTP to the foreground group
			// "Stopped (signal)" would mean stopped by SIGSTOP.
			p.expect(t, "Stopped  ")
			p.expect(t, "e2e$ ")
			assert.Equal(t, shell.Process.Pid, p.foreground(t), "the shell took the terminal back")
			st, _ := readProcStat(sh)
			assert.Contains(t, []byte{'T', 't'}, st.State, "the command is stopped (state %c)", st.State)
			if m != native {
				st, _ := readProcStat(pgrp) // txexec leads the job's group
				assert.Equal(t, byte('T'), st.State, "txexec is stopped with its job (state %c)", st.State)
			}
			p.typeIn(t, echoStatus)
			p.expect(t, fmt.Sprintf("status=%d", 128+int(unix.SIGTSTP)))
			p.expect(t, "e2e$ ")

			p.typeIn(t, "fg\n")
			waitFor(t, "the job to be in the foreground and reading again", func() bool {
				st, _ := readProcStat(sh)
				return p.foreground(t) == pgrp && st.State == 'S'
			})
			p.typeIn(t, "hello\n")
			p.expect(t, "got hello")
			p.expect(t, "e2e$ ")
			p.typeIn(t, echoStatus)
			p.expect(t, "status=0")
			p.typeIn(t, "exit\n")
			require.NoError(t, shell.Wait())
		})
	}
}
