package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// mode is how a command is run: on Linux itself, or under txexec.
type mode int

const (
	native      mode = iota
	passthrough      // txexec --passthrough --
	transaction      // txexec -- (one transaction)
)

func (m mode) String() string {
	return [...]string{"native", "passthrough", "transaction"}[m]
}

// underTxexec are the modes compared against native by default.
var underTxexec = []mode{passthrough, transaction}

// commandTimeout bounds one run, so that a hang fails the test with a message
// instead of eating the package's time budget. It is not an assertion about
// speed: every command here finishes in seconds.
const commandTimeout = 3 * time.Minute

// command is one program to run.
type command struct {
	Argv []string
	Dir  string
	// Env is added to the base environment (later entries win).
	Env   []string
	Stdin io.Reader
	// TxArgs are txexec options placed before "--".
	TxArgs []string
}

// result is what a run produced.
type result struct {
	Stdout, Stderr string
	// Status is the shell-style exit status: the exit code, or 128+N for
	// death by signal N.
	Status int
}

// requireTools skips (or, in CI, fails) unless every tool is on PATH.
func requireTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipOrFail(t, "%s is not installed: %v", tool, err)
		}
	}
}

// baseEnv is the environment of every run: the test's own, made
// deterministic, with a private txexec state directory.
func baseEnv(t testing.TB) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TXEXEC_") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "LANGUAGE" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "TZ=UTC", "TXEXEC_STATE_DIR="+t.TempDir())
}

// argvFor is the command line that runs c in mode m.
func argvFor(m mode, c command) []string {
	switch m {
	case passthrough:
		return append(append(append([]string{txexecBin, "--passthrough"}, c.TxArgs...), "--"), c.Argv...)
	case transaction:
		return append(append(append([]string{txexecBin}, c.TxArgs...), "--"), c.Argv...)
	}
	return c.Argv
}

// newCmd prepares c in mode m without starting it.
func newCmd(ctx context.Context, t testing.TB, m mode, c command) *exec.Cmd {
	t.Helper()
	argv := argvFor(m, c)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = append(baseEnv(t), c.Env...)
	cmd.Stdin = c.Stdin
	cmd.WaitDelay = 10 * time.Second
	// If the test binary dies (a timeout panic), txexec dies with it, and
	// its tree with txexec.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// run runs c in mode m and returns what it produced.
func run(t testing.TB, m mode, c command) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := newCmd(ctx, t, m, c)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: %q did not finish within %v; stderr:\n%s", m, c.Argv, commandTimeout, stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: run %q: %v", m, cmd.Args, err)
	}
	return result{Stdout: stdout.String(), Stderr: stderr.String(), Status: statusOf(cmd.ProcessState)}
}

// statusOf is a shell's $? for a finished process.
func statusOf(ps *os.ProcessState) int {
	ws := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// abortLine is the one line txexec adds on stderr when the transaction of a
// command that failed is rolled back (--on-exit=success).
var abortLine = regexp.MustCompile(`(?m)^txexec: transaction [0-9]+ aborted: the command exited with status ([0-9]+)\n`)

// withoutAbortLine checks that stderr of a transactional run ends with
// exactly one abort line for status, and returns stderr without it.
func withoutAbortLine(t testing.TB, stderr string, status int) string {
	t.Helper()
	ms := abortLine.FindAllStringSubmatchIndex(stderr, -1)
	if !assert.Len(t, ms, 1, "transaction of a command that exited %d must report one abort line; stderr:\n%s", status, stderr) {
		return stderr
	}
	m := ms[0]
	assert.Equal(t, strconv.Itoa(status), stderr[m[2]:m[3]], "abort line names the command's status")
	return stderr[:m[0]] + stderr[m[1]:]
}

// parity is one differential case: the same command run natively and under
// txexec in a fresh, identically prepared work directory (same absolute path
// every time), comparing stdout, stderr, status and the resulting tree.
type parity struct {
	name string
	argv []string
	env  []string
	// setup fills the fresh work directory before each run.
	setup func(t *testing.T, dir string)
	// modes are compared against native (default underTxexec).
	modes []mode
	// noTree: do not compare the work directory afterwards.
	noTree bool
	// volatile are paths (relative to the work directory) whose content
	// legitimately differs between runs (e.g. git's index holds inode
	// numbers); their presence, type, mode and owner are still compared.
	volatile []string
	// knownBug, when set, skips the comparisons under txexec with this
	// reason (the native run still has to work). Remove it with the fix.
	knownBug string
}

// check runs the case and compares every mode against native.
func (p parity) check(t *testing.T) {
	t.Helper()
	base := t.TempDir()
	work := filepath.Join(base, "work")
	modes := p.modes
	if modes == nil {
		modes = underTxexec
	}
	type outcome struct {
		res         result
		before, now []string
	}
	runIn := func(m mode) outcome {
		require.NoError(t, os.RemoveAll(work))
		require.NoError(t, os.Mkdir(work, 0o755))
		if p.setup != nil {
			p.setup(t, work)
		}
		var o outcome
		if !p.noTree {
			o.before = snapshotTree(t, work, p.volatile)
		}
		o.res = run(t, m, command{Argv: p.argv, Dir: work, Env: p.env})
		if !p.noTree {
			o.now = snapshotTree(t, work, p.volatile)
		}
		return o
	}
	want := runIn(native)
	t.Logf("native: status %d, %d bytes of stdout, %d of stderr", want.res.Status, len(want.res.Stdout), len(want.res.Stderr))
	if p.knownBug != "" {
		t.Skipf("known bug: %s", p.knownBug)
	}
	for _, m := range modes {
		got := runIn(m)
		stderr := got.res.Stderr
		wantTree := want.now
		if m == transaction && want.res.Status != 0 {
			// The command failed: the transaction rolls back, and says so.
			stderr = withoutAbortLine(t, stderr, want.res.Status)
			wantTree = got.before
		}
		assert.Equal(t, want.res.Status, got.res.Status, "%s: exit status; stderr:\n%s", m, got.res.Stderr)
		assert.Equal(t, want.res.Stdout, got.res.Stdout, "%s: stdout", m)
		assert.Equal(t, want.res.Stderr, stderr, "%s: stderr", m)
		if !p.noTree {
			assert.Equal(t, wantTree, got.now, "%s: the work directory afterwards", m)
		}
	}
}

// snapshotTree describes every file under root: type, permissions, owner,
// and for regular files size and content hash, for symlinks the target.
// Times are left out: they differ between any two runs.
func snapshotTree(t testing.TB, root string, volatile []string) []string {
	t.Helper()
	skipContent := map[string]bool{}
	for _, v := range volatile {
		skipContent[filepath.Clean(v)] = true
	}
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		head := fmt.Sprintf("%v %d:%d", info.Mode(), st.Uid, st.Gid)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %s -> %s", head, rel, target))
		case d.Type().IsRegular() && !skipContent[rel]:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %s size=%d sha256=%x", head, rel, len(b), sha256.Sum256(b)))
		default:
			out = append(out, fmt.Sprintf("%s %s", head, rel))
		}
		return nil
	})
	require.NoError(t, err, "snapshot %s", root)
	sort.Strings(out)
	return out
}

// writeFiles creates files under dir: name → content. Names ending in "/"
// are directories.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// buildC compiles testdata/<src>.c into dir/<out> with gcc.
func buildC(t testing.TB, dir, src, out string, flags ...string) string {
	t.Helper()
	requireTools(t, "gcc")
	bin := filepath.Join(dir, out)
	srcPath, err := filepath.Abs(filepath.Join("testdata", src+".c"))
	require.NoError(t, err)
	args := append([]string{"-O2", "-Wall", "-pthread", "-o", bin, srcPath}, flags...)
	b, err := exec.Command("gcc", args...).CombinedOutput()
	require.NoError(t, err, "gcc %s:\n%s", strings.Join(args, " "), b)
	return bin
}

// buildGoFixture builds testdata/gofixture, as its own module, into dir.
func buildGoFixture(t testing.TB, dir string) string {
	t.Helper()
	requireTools(t, "go")
	mod := filepath.Join(dir, "gofixture-src")
	require.NoError(t, os.MkdirAll(mod, 0o755))
	src, err := os.ReadFile(filepath.Join("testdata", "gofixture", "main.go"))
	require.NoError(t, err)
	writeFiles(t, mod, map[string]string{
		"main.go": string(src),
		"go.mod":  "module gofixture\n\ngo 1.26\n",
	})
	bin := filepath.Join(dir, "gofixture")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build gofixture:\n%s", b)
	return bin
}

// openToOthers makes dir and its parents up to the temp root traversable by
// any user (t.TempDir creates them 0700), so that an unprivileged process
// can reach fixtures in it.
func openToOthers(t testing.TB, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for d := filepath.Clean(dir); strings.HasPrefix(d, tmp+"/"); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
}

// procStat is what /proc/PID/stat says about a process.
type procStat struct {
	State     byte
	Ppid      int
	Pgrp      int
	Session   int
	StartTime uint64
}

// readProcStat reads /proc/pid/stat; ok is false if the process is gone.
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	// The command name is in parentheses and may contain anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	var s procStat
	s.State = f[0][0]
	s.Ppid, _ = strconv.Atoi(f[1])
	s.Pgrp, _ = strconv.Atoi(f[2])
	s.Session, _ = strconv.Atoi(f[3])
	s.StartTime, _ = strconv.ParseUint(f[19], 10, 64)
	return s, true
}

// allPids lists the processes in /proc.
func allPids(t testing.TB) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitFor polls cond until it holds; it fails the test if it never does
// within a generous bound (a hang guard, not a timing assertion).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lineReader collects the lines a process writes to a pipe, so that a test
// can wait for a particular one.
type lineReader struct {
	lines chan string
}

func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}
		close(lr.lines)
	}()
	return lr
}

// next returns the next line; it fails the test at EOF or after the bound.
func (lr *lineReader) next(t testing.TB) string {
	t.Helper()
	select {
	case l, ok := <-lr.lines:
		if !ok {
			t.Fatalf("output ended while a line was expected")
		}
		return l
	case <-time.After(time.Minute):
		t.Fatalf("gave up waiting for a line of output")
	}
	return ""
}
