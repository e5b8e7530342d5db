package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"txexec/internal/cli"
)

// A run that txexec compares or records (--repeat, --record, replay) is
// a child txexec, a deterministic run whose transaction it keeps
// (--on-exit=keep): its stdout and stderr are captured (and passed on
// live where asked), and the parent reads its changes from the store
// before deciding what becomes of it.

// childSpec is one child run.
type childSpec struct {
	args    []string // after "txexec"
	env     []string
	dir     string
	stdin   io.Reader
	liveOut io.Writer // nil: captured only
	liveErr io.Writer
	sys     *syscall.SysProcAttr
}

// childResult is what a child run left.
type childResult struct {
	status         int
	stdout, stderr []byte
	// kept is the id of its kept transaction, 0 if it kept none (it
	// failed before, or its transaction aborted).
	kept int64
}

// keptLine is the line a kept transaction ends the child's stderr with
// (keep); it is txexec's, not the command's, and is taken out.
var keptLine = regexp.MustCompile(`^txexec: transaction (\d+) kept; finish it with txexec commit \d+ or txexec abort \d+\n$`)

// runChild runs spec to its end.
func runChild(spec childSpec) (childResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return childResult{}, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(exe, spec.args...)
	cmd.Env, cmd.Dir, cmd.Stdin = spec.env, spec.dir, spec.stdin
	var out bytes.Buffer
	errs := &keptFilter{}
	cmd.Stdout = writers(&out, spec.liveOut)
	cmd.Stderr = errs
	errs.out = writers(&errs.captured, spec.liveErr)
	cmd.SysProcAttr = spec.sys
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	err = cmd.Run()
	errs.flush()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		return childResult{}, fmt.Errorf("run txexec: %w", err)
	}
	return childResult{status: statusOf(cmd.ProcessState), stdout: out.Bytes(), stderr: errs.captured.Bytes(), kept: errs.kept}, nil
}

func writers(a io.Writer, b io.Writer) io.Writer {
	if b == nil {
		return a
	}
	return io.MultiWriter(a, b)
}

// statusOf is a shell's $? for a finished process.
func statusOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// keptFilter passes a child's stderr on line by line, but for the line
// that says it kept its transaction, whose id it notes.
type keptFilter struct {
	out      io.Writer
	captured bytes.Buffer
	partial  []byte
	kept     int64
}

func (f *keptFilter) Write(p []byte) (int, error) {
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.partial[:i+1]
		if m := keptLine.FindSubmatch(line); m != nil {
			f.kept, _ = strconv.ParseInt(string(m[1]), 10, 64)
		} else {
			f.out.Write(line)
		}
		f.partial = f.partial[i+1:]
	}
}

func (f *keptFilter) flush() {
	if len(f.partial) > 0 {
		f.out.Write(f.partial)
		f.partial = nil
	}
}

// childArgs are the options of a child run of o: deterministic with
// seed, its transaction kept in stateDir, the options that change how the
// command runs passed on.
func childArgs(o *cli.Run, seed uint64, stateDir string, argv []string) []string {
	args := []string{"--deterministic=" + strconv.FormatUint(seed, 10), "--on-exit=keep", "--state-dir=" + stateDir,
		"--unsupported=" + cli.Lookup("unsupported").Choices[o.Unsupported],
		"--signals=" + cli.Lookup("signals").Choices[o.Signals]}
	if !o.Durable {
		args = append(args, "--no-durable")
	}
	for _, x := range o.Excludes {
		args = append(args, "--exclude="+x)
	}
	if o.Trace {
		if o.TraceFile != "" {
			args = append(args, "--trace="+o.TraceFile)
		} else {
			args = append(args, "--trace")
		}
	}
	return append(append(args, "--"), argv...)
}

// firstDifference names what of two outcomes differs, "" if nothing.
func firstDifferences(a, b runOutcome) []string {
	var d []string
	if a.status != b.status {
		d = append(d, fmt.Sprintf("exit status (%d, %d)", a.status, b.status))
	}
	if !bytes.Equal(a.stdout, b.stdout) {
		d = append(d, "stdout")
	}
	if !bytes.Equal(a.stderr, b.stderr) {
		d = append(d, "stderr")
	}
	if strings.Join(a.changes, "\n") != strings.Join(b.changes, "\n") {
		d = append(d, "changes")
	}
	return d
}
