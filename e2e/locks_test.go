package e2e

import (
	"bufio"
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
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// Issue 20: a transaction's advisory locks are the host's too, held until
// it ends, and lock files it opened for writing keep their inode.

// lockScript is a Python program that takes, tests and releases locks as
// its arguments say, one step after the other:
//
//	open MODE PATH   open PATH (r, r+ or a)
//	lockf|flock|ofd  take an exclusive lock, waiting
//	try-lockf|try-flock|try-ofd
//	                 try to take it without waiting; print "locked", "busy",
//	                 or "ebadf" (a write lock through a read-only descriptor)
//	lockf-sh|flock-sh|ofd-sh, try-lockf-sh|try-flock-sh|try-ofd-sh
//	                 the same with a shared (read) lock
//	unlock-lockf|unlock-flock
//	say PATH WORD    write WORD to PATH (a FIFO)
//	wait PATH        read a line from PATH (a FIFO)
//	line             print "ready", then read a line from stdin
//	stdin            read a line from stdin (a transaction's process waits
//	                 so: a FIFO it reads would be in its read set, and the
//	                 writer outside would change it)
//	getlk            print the F_GETLK view of an exclusive lock: "free" or
//	                 "held by PID"
//	cat PATH         print the first line of PATH
//	sigusr1          count SIGUSR1 in a handler (Python retries calls it
//	                 interrupts, PEP 475); print the count at exit
const lockScript = `
import fcntl, os, signal, struct, sys
f = None
sigs = [0]
args = sys.argv[1:]
def take(kind, nb):
    shared = kind.endswith("-sh")
    kind = kind.removesuffix("-sh")
    op = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (fcntl.LOCK_NB if nb else 0)
    if kind == "flock":
        fcntl.flock(f, op)
    elif kind == "lockf":
        fcntl.lockf(f, op)
    else:
        cmd = fcntl.F_OFD_SETLK if nb else fcntl.F_OFD_SETLKW
        typ = fcntl.F_RDLCK if shared else fcntl.F_WRLCK
        fcntl.fcntl(f, cmd, struct.pack("hhqqi4x", typ, 0, 0, 0, 0))
while args:
    a = args.pop(0)
    if a == "open":
        mode, path = args.pop(0), args.pop(0)
        f = open(path, mode)
    elif a.removesuffix("-sh") in ("lockf", "flock", "ofd"):
        take(a, False)
    elif a.startswith("try-"):
        try:
            take(a[4:], True)
            print("locked", flush=True)
        except OSError as e:
            assert e.errno in (9, 11, 13), e
            print("ebadf" if e.errno == 9 else "busy", flush=True)
    elif a == "unlock-lockf":
        fcntl.lockf(f, fcntl.LOCK_UN)
    elif a == "unlock-flock":
        fcntl.flock(f, fcntl.LOCK_UN)
    elif a == "say":
        path, word = args.pop(0), args.pop(0)
        with open(path, "w") as p:
            p.write(word + "\n")
    elif a == "wait":
        with open(args.pop(0)) as p:
            p.readline()
    elif a == "line":
        print("ready", flush=True)
        sys.stdin.readline()
    elif a == "stdin":
        sys.stdin.readline()
    elif a == "getlk":
        r = fcntl.fcntl(f, fcntl.F_GETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0))
        typ, _, _, _, pid = struct.unpack("hhqqi4x", r)
        print("free" if typ == fcntl.F_UNLCK else "held by %d" % pid, flush=True)
    elif a == "cat":
        with open(args.pop(0)) as p:
            print(p.readline().strip(), flush=True)
    elif a == "sigusr1":
        def h(sig, frame):
            sigs[0] += 1
        signal.signal(signal.SIGUSR1, h)
        print(os.getpid(), flush=True)
    else:
        raise SystemExit("lockScript: unknown step " + a)
if sigs[0]:
    print("signals", sigs[0], flush=True)
`

// lockSteps is the command line of lockScript with steps.
func lockSteps(steps ...string) []string {
	return append([]string{"python3", "-c", lockScript}, steps...)
}

// outsider is a process outside any transaction running lockScript, which
// it drives line by line through stdin ("line" steps) and stdout.
type outsider struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startOutsider(t *testing.T, steps ...string) *outsider {
	t.Helper()
	argv := lockSteps(steps...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	o := &outsider{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return o
}

// next reads the outsider's next line of output.
func (o *outsider) next(t *testing.T) string {
	t.Helper()
	l, err := o.out.ReadString('\n')
	require.NoError(t, err, "the outside process ended early")
	return strings.TrimSpace(l)
}

// proceed lets the outsider past its next "line" step.
func (o *outsider) proceed(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(o.in, "\n")
	require.NoError(t, err)
}

// wait waits for the outsider to exit, successfully.
func (o *outsider) wait(t *testing.T) {
	t.Helper()
	o.in.Close()
	rest, _ := io.ReadAll(o.out)
	require.NoError(t, o.cmd.Wait(), "outside process: %s", rest)
}

// probe reports what a process outside any transaction gets from a
// non-blocking exclusive lock of kind (flock, lockf, ofd) on path: "locked"
// or "busy".
func probe(t *testing.T, kind, path string) string {
	t.Helper()
	r := rwRun(t, nil, lockSteps("open", "r+", path, "try-"+kind)...)
	require.Equal(t, 0, r.code, r.stderr)
	return strings.TrimSpace(r.stdout)
}

// txRun is a txexec started by startTx.
type txRun struct {
	// stdin is the command's standard input.
	stdin io.WriteCloser
	// wait waits for txexec and returns its outcome.
	wait func() rwResult
}

// proceed lets the command past its next "stdin" step.
func (r txRun) proceed(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(r.stdin, "\n")
	require.NoError(t, err)
}

// startTx starts txexec on argv with a private state directory.
func startTx(t *testing.T, state string, argv ...string) txRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, txexecBin, append([]string{"--"}, argv...)...)
	cmd.Env = append(os.Environ(), "TXEXEC_STATE_DIR="+state)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
		cancel()
	})
	return txRun{stdin: stdin, wait: func() rwResult {
		stdin.Close()
		err := cmd.Wait()
		waited = true
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return rwResult{out.String(), errb.String(), code}
	}}
}

// readFIFO reads one line from FIFO p.
func readFIFO(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(p, &st))
	return st.Ino
}

// TestTransactionLockExcludesOutsideUntilItEnds: a lock a process of the
// transaction takes on a host file excludes processes outside, also after
// the process unlocked it, until the transaction has ended; then they get
// it. The lock file, opened for writing or not, keeps its inode.
func TestTransactionLockExcludesOutsideUntilItEnds(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3", "flock")
	for _, tc := range []struct {
		name, kind, mode string
	}{
		{"flock through a read-only descriptor", "flock", "r"},
		{"flock through a descriptor open for writing", "flock", "a"},
		{"lockf", "lockf", "r+"},
		{"OFD lock", "ofd", "r+"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lock := filepath.Join(dir, "lock")
			require.NoError(t, os.WriteFile(lock, nil, 0o644))
			before := inode(t, lock)
			held, unlocked := filepath.Join(dir, "held"), filepath.Join(dir, "unlocked")
			for _, p := range []string{held, unlocked} {
				mkfifo(t, p)
			}
			unlock := "unlock-" + tc.kind
			if tc.kind == "ofd" {
				unlock = "unlock-lockf" // F_SETLK F_UNLCK: served as OFD on the same description
			}
			tx := startTx(t, t.TempDir(), lockSteps("open", tc.mode, lock, tc.kind, "say", held, "x",
				"stdin", unlock, "say", unlocked, "x", "stdin")...)
			readFIFO(t, held)
			probeKind := tc.kind
			if probeKind == "ofd" {
				probeKind = "lockf" // a POSIX lock outside conflicts with an OFD lock
			}
			assert.Equal(t, "busy", probe(t, probeKind, lock), "while the transaction's process holds it")
			tx.proceed(t)
			readFIFO(t, unlocked)
			assert.Equal(t, "busy", probe(t, probeKind, lock), "after the process unlocked it, until the transaction ends")
			r := tx.wait()
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "locked", probe(t, probeKind, lock), "once the transaction has ended")
			assert.Equal(t, before, inode(t, lock), "the lock file keeps its inode")
		})
	}
}

// TestOutsideLockHolderMakesTransactionFailOrWait: a lock held outside
// makes a transaction's non-blocking attempt fail and its blocking one
// wait until it is released; F_GETLK inside names the holder's pid.
func TestOutsideLockHolderMakesTransactionFailOrWait(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3")
	for _, kind := range []string{"flock", "lockf"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			lock, released, waiting := filepath.Join(dir, "lock"), filepath.Join(dir, "released"), filepath.Join(dir, "waiting")
			require.NoError(t, os.WriteFile(lock, nil, 0o644))
			mkfifo(t, waiting)
			holder := startOutsider(t, "open", "r+", lock, kind, "line")
			require.Equal(t, "ready", holder.next(t))
			steps := []string{"open", "r+", lock, "try-" + kind}
			if kind == "lockf" {
				steps = append(steps, "getlk")
			}
			steps = append(steps, "say", waiting, "x", kind, "cat", released)
			tx := startTx(t, t.TempDir(), lockSteps(steps...)...)
			readFIFO(t, waiting)
			require.NoError(t, os.WriteFile(released, []byte("released\n"), 0o644))
			holder.proceed(t)
			holder.wait(t)
			r := tx.wait()
			require.Equal(t, 0, r.code, r.stderr)
			want := "busy\n"
			if kind == "lockf" {
				want += "held by " + strconv.Itoa(holder.cmd.Process.Pid) + "\n"
			}
			assert.Equal(t, want+"released\n", r.stdout, "the blocking lock was granted after the holder let go")
		})
	}
}

// TestBlockedLockIsInterruptedBySignal: a signal interrupts a
// transaction's process waiting for a lock held outside, as on Linux:
// flock -w gives up when its timer fires (EINTR), and a handler that
// returns lets the call start again (Python retries it), which is then
// granted once the holder lets go.
func TestBlockedLockIsInterruptedBySignal(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3", "flock")
	dir := t.TempDir()
	lock := filepath.Join(dir, "lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	holder := startOutsider(t, "open", "r+", lock, "flock", "line")
	require.Equal(t, "ready", holder.next(t))

	native := rwRun(t, nil, "flock", "-w", "1", lock, "true")
	r := rwTx(t, t.TempDir(), nil, "--", "flock", "-w", "1", lock, "true")
	assert.Equal(t, native.code, r.code, "flock -w 1 while held outside: %s", r.stderr)
	assert.Equal(t, 1, r.code)

	pidFIFO := filepath.Join(dir, "pid")
	mkfifo(t, pidFIFO)
	tx := startTx(t, t.TempDir(), "sh", "-c", `python3 -c "$0" sigusr1 open r "$1" flock > "$2"`, lockScript, lock, pidFIFO)
	f, err := os.Open(pidFIFO)
	require.NoError(t, err)
	defer f.Close()
	out := bufio.NewReader(f)
	pid, err := out.ReadString('\n')
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(pid))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(n, syscall.SIGUSR1))
	holder.proceed(t)
	holder.wait(t)
	rest, err := io.ReadAll(out)
	require.NoError(t, err)
	r = tx.wait()
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "signals 1\n", string(rest), "the handler ran once and the lock was then granted")
}

// TestTwoTransactionsSerializeOnALock: two transactions that lock the same
// file run their critical sections one after the other, and the second
// sees what the first wrote under the lock: it waits until the first has
// been written through (strict two-phase locking).
func TestTwoTransactionsSerializeOnALock(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "flock")
	dir := t.TempDir()
	lock, held, waiting, written := filepath.Join(dir, "lock"), filepath.Join(dir, "held"), filepath.Join(dir, "waiting"), filepath.Join(dir, "written")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	for _, p := range []string{held, waiting} {
		mkfifo(t, p)
	}
	first := startTx(t, t.TempDir(), "flock", lock, "sh", "-c", `echo x > "$0"; read x; echo "by the first" > "$1"`, held, written)
	readFIFO(t, held)
	second := startTx(t, t.TempDir(), "sh", "-c",
		`flock -n "$0" true; echo "try $?"; echo x > "$1"; flock "$0" cat "$2"`, lock, waiting, written)
	readFIFO(t, waiting)
	first.proceed(t)
	r := first.wait()
	require.Equal(t, 0, r.code, r.stderr)
	r = second.wait()
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "try 1\nby the first\n", r.stdout)
}

// TestFcntlTrapsOnlyLockCommands: the filter sends fcntl to the
// supervisor only for its lock commands.
func TestFcntlTrapsOnlyLockCommands(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3")
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	trace := filepath.Join(dir, "trace")
	r := rwTx(t, t.TempDir(), nil, "--trace="+trace, "--", "python3", "-c", `
import fcntl, sys
f = open(sys.argv[1], "r+")
fcntl.fcntl(f, fcntl.F_GETFL)
fcntl.fcntl(f, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
fcntl.lockf(f, fcntl.LOCK_EX)
`, f)
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(trace)
	require.NoError(t, err)
	var cmds []string
	for _, m := range regexp.MustCompile(`fcntl\([^,]*, ([^,]*),`).FindAllStringSubmatch(string(b), -1) {
		cmds = append(cmds, m[1])
	}
	assert.Equal(t, []string{"F_SETLKW"}, cmds, "only lockf's F_SETLKW was intercepted")
}

// dpkgLockFiles are the lock files of dpkg and apt.
var dpkgLockFiles = []string{"/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/cache/apt/archives/lock"}

// withoutTxexecLines drops txexec's own lines from a command's stderr.
func withoutTxexecLines(s string) string {
	var out []string
	for l := range strings.Lines(s) {
		if !strings.HasPrefix(l, "txexec:") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// TestDpkgAgainstOutsideLockHolder: while a process outside holds dpkg's
// frontend or database lock (lockf, as dpkg and apt take them), dpkg -i
// in a transaction fails as native dpkg does, with dpkg's own message and
// the holder's pid, and installs nothing; once the holder lets go, it
// installs.
func TestDpkgAgainstOutsideLockHolder(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3", "dpkg")
	const pkg = "txexec-test-locked"
	deb := buildDeb(t, pkg, 2, "#!/bin/sh\nexit 0\n")
	purgeAtEnd(t, pkg)
	state := t.TempDir()
	for _, lockFile := range dpkgLockFiles[:2] {
		t.Run(filepath.Base(lockFile), func(t *testing.T) {
			holder := startOutsider(t, "open", "r+", lockFile, "lockf", "line")
			require.Equal(t, "ready", holder.next(t))
			native := rwRun(t, nil, "dpkg", "-i", deb)
			require.NotEqual(t, 0, native.code, "native dpkg runs while the lock is held: %s", native.stderr)
			assert.Contains(t, native.stderr, "locked by another process with pid "+strconv.Itoa(holder.cmd.Process.Pid))
			r := rwTx(t, state, nil, "--", "dpkg", "-i", deb)
			assert.Equal(t, native.code, r.code, r.stderr)
			assert.Equal(t, native.stderr, withoutTxexecLines(r.stderr))
			assert.False(t, dpkgInstalled(t, pkg))
			holder.proceed(t)
			holder.wait(t)
		})
	}
	r := rwTx(t, state, nil, "--", "dpkg", "-i", deb)
	require.Equal(t, 0, r.code, r.stderr)
	assert.True(t, dpkgInstalled(t, pkg))
}

// TestDpkgCommitKeepsLockFiles: dpkg -i in a transaction opens its lock
// files for writing but writes nothing to them: the commit changes their
// times in place, as native dpkg's O_TRUNC does, and does not replace
// them (same inodes), so a process that opened one before the commit and
// locks it after still excludes every dpkg, native or in a transaction.
func TestDpkgCommitKeepsLockFiles(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3", "dpkg")
	const pkg = "txexec-test-lockfiles"
	deb := buildDeb(t, pkg, 2, "#!/bin/sh\nexit 0\n")
	purgeAtEnd(t, pkg)
	before := map[string]uint64{}
	for _, p := range dpkgLockFiles {
		before[p] = inode(t, p)
	}
	holder := startOutsider(t, "open", "r+", "/var/lib/dpkg/lock", "line", "lockf", "line")
	require.Equal(t, "ready", holder.next(t), "the lock file is open")

	state := t.TempDir()
	r := rwTx(t, state, nil, "--", "dpkg", "-i", deb)
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, dpkgInstalled(t, pkg))
	for _, p := range dpkgLockFiles {
		assert.Equal(t, before[p], inode(t, p), "%s keeps its inode", p)
	}
	show := rwRun(t, []string{"TXEXEC_STATE_DIR=" + state}, txexecBin, "show", "1")
	require.Equal(t, 0, show.code, show.stderr)
	assert.Contains(t, show.stdout, "/var/lib/dpkg/status")
	for _, p := range dpkgLockFiles {
		// dpkg opens its locks with O_TRUNC, which moves their times, as
		// natively: that much is a change, in place.
		assert.NotRegexp(t, regexp.MustCompile(`(?m)^\s*(replace|write|create) `+regexp.QuoteMeta(p)+`\b`), show.stdout,
			"show lists only real changes")
	}

	holder.proceed(t)
	require.Equal(t, "ready", holder.next(t), "the lock is held through the descriptor opened before the commit")
	native := rwRun(t, nil, "dpkg", "-r", pkg)
	assert.Equal(t, 2, native.code, "native dpkg is excluded: %s", native.stderr)
	r = rwTx(t, state, nil, "--", "dpkg", "-r", pkg)
	assert.Equal(t, 2, r.code, "dpkg in a transaction is excluded: %s", r.stderr)
	assert.True(t, dpkgInstalled(t, pkg))
	holder.proceed(t)
	holder.wait(t)
	r = rwTx(t, state, nil, "--", "dpkg", "-r", pkg)
	require.Equal(t, 0, r.code, r.stderr)
	assert.False(t, dpkgInstalled(t, pkg))
}

// TestAptWaitsForOutsideLockHolder: apt-get in a transaction, told to wait
// for dpkg's locks, waits while a process outside holds the frontend
// lock, naming it as natively ("It is held by process PID"), and runs
// dpkg only once the holder has let go; the lock files keep their inodes.
func TestAptWaitsForOutsideLockHolder(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3", "apt-get", "dpkg")
	const pkg = "txexec-test-apt-locked"
	deb := buildDeb(t, pkg, 2, "#!/bin/sh\nexit 0\n")
	purgeAtEnd(t, pkg)
	before := map[string]uint64{}
	for _, p := range dpkgLockFiles {
		before[p] = inode(t, p)
	}
	released := filepath.Join(t.TempDir(), "released")
	holder := startOutsider(t, "open", "r+", "/var/lib/dpkg/lock-frontend", "lockf", "line")
	require.Equal(t, "ready", holder.next(t))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The hook runs under apt's locks, just before dpkg.
	cmd := exec.CommandContext(ctx, txexecBin, "--", "apt-get", "install", "-y", "-q",
		"-o", "DPkg::Lock::Timeout=300", "-o", "DPkg::Pre-Invoke::=test -e "+released, deb)
	cmd.Env = append(os.Environ(), "TXEXEC_STATE_DIR="+t.TempDir(), "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	lines := bufio.NewReader(out)
	var seen strings.Builder
	for {
		l, err := lines.ReadString('\n')
		seen.WriteString(l)
		require.NoError(t, err, "apt ended without waiting for the lock: %s%s", seen.String(), stderr.String())
		if strings.Contains(l, "Waiting for cache lock") {
			assert.Contains(t, l, "Could not get lock /var/lib/dpkg/lock-frontend. It is held by process "+strconv.Itoa(holder.cmd.Process.Pid))
			break
		}
	}
	require.NoError(t, os.WriteFile(released, nil, 0o644))
	holder.proceed(t)
	holder.wait(t)
	rest, _ := io.ReadAll(lines)
	require.NoError(t, cmd.Wait(), "apt-get: %s%s%s", seen.String(), rest, stderr.String())
	assert.True(t, dpkgInstalled(t, pkg))
	for _, p := range dpkgLockFiles {
		assert.Equal(t, before[p], inode(t, p), "%s keeps its inode", p)
	}
}

// TestTreeLocksOnUnchangedFileExcludeEachOther: processes of one
// transaction that lock a host file they opened read-only, which the
// transaction has not changed, exclude each other as on Linux, whatever
// the lock family and however the other opened the file: the locking
// descriptor is moved onto the file's staged copy, where the tree's locks
// meet. Each case runs natively and in a transaction with the same
// output; the transaction commits, and the file keeps its inode and
// contents.
func TestTreeLocksOnUnchangedFileExcludeEachOther(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3", "flock")
	// Two processes of lockScript in lock-step through FIFOs: the first
	// ($a) holds a lock while the second ($b) tries its own.
	const twoProcs = `cd "$0" || exit; python3 -c "$1" $2 & python3 -c "$1" $3; wait`
	for _, tc := range []struct {
		name string
		a, b string
		want string
	}{
		{"flock through read-only descriptors",
			"open r lock flock say held x wait done",
			"wait held open r lock try-flock say done x", "busy\n"},
		{"flock, then through a descriptor open for writing",
			"open r lock flock say held x wait done",
			"wait held open r+ lock try-flock say done x", "busy\n"},
		{"flock through a descriptor opened before the other's lock",
			"wait opened open r lock flock say held x wait done",
			"open r lock say opened x wait held try-flock say done x", "busy\n"},
		{"lockf read lock through a read-only descriptor",
			"open r lock lockf-sh say held x wait done",
			"wait held open r+ lock try-lockf try-lockf-sh say done x", "busy\nlocked\n"},
		{"OFD read lock through a read-only descriptor",
			"open r lock ofd-sh say held x wait done",
			"wait held open r lock try-ofd try-ofd-sh open r+ lock try-ofd say done x", "ebadf\nlocked\nbusy\n"},
		{"F_GETLK through a read-only descriptor names the tree's lock",
			"open r lock lockf-sh say held x wait done",
			"wait held open r lock getlk say done x", "held\n"},
		{"flock(1) commands",
			"", "", "try 1\nafter 0\n"},
		// A description another process shares stays on the original
		// (docs/semantics.md §8): moving one copy of it would part the
		// two, and the child would not hold its parent's lock.
		{"a description shared with a child is one lock",
			`py import fcntl, os
f = open("lock")
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.read(r, 1)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print("locked", flush=True)
    except BlockingIOError:
        print("busy", flush=True)
    os._exit(0)
fcntl.flock(f, fcntl.LOCK_EX)
os.write(w, b"x")
os.waitpid(pid, 0)`, "", "locked\n"},
		{"the locking descriptor keeps its offset, flags, access mode and close-on-exec flag",
			`py import errno, fcntl, os
fds = [os.open("lock", os.O_RDONLY), os.open("lock", os.O_RDONLY)]
os.set_inheritable(fds[1], True)
for fd in fds:
    os.read(fd, 3)
    flags = lambda: (fcntl.fcntl(fd, fcntl.F_GETFL), fcntl.fcntl(fd, fcntl.F_GETFD))
    before = flags()
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        os.write(fd, b"x")
    except OSError as e:
        print(errno.errorcode[e.errno])
    print(before == flags(), os.read(fd, 100).decode().strip(), os.fstat(fd).st_ino == os.stat("lock").st_ino)`,
			"", "EBADF\nTrue tents True\nEBADF\nTrue tents True\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := []string{"sh", "-c", twoProcs, "", lockScript, tc.a, tc.b}
			if py, ok := strings.CutPrefix(tc.a, "py "); ok {
				argv = []string{"sh", "-c", `cd "$0" || exit; python3 -c "$1"`, "", py}
			} else if tc.a == "" {
				argv = []string{"sh", "-c", `cd "$0" || exit; flock -x lock sh -c 'echo x > held; read x < done' &
					read x < held; flock -n lock true; echo "try $?"; echo x > done; wait
					flock -n lock true; echo "after $?"`, ""}
			}
			heldBy := regexp.MustCompile(`held by -?[0-9]+`)
			run := func(tx bool) (rwResult, string) {
				dir := t.TempDir()
				lock := filepath.Join(dir, "lock")
				require.NoError(t, os.WriteFile(lock, []byte("contents\n"), 0o644))
				for _, p := range []string{"held", "done", "opened"} {
					mkfifo(t, filepath.Join(dir, p))
				}
				argv[3] = dir
				var r rwResult
				if tx {
					before := inode(t, lock)
					r = rwTx(t, t.TempDir(), nil, append([]string{"--"}, argv...)...)
					assert.Equal(t, before, inode(t, lock), "the lock file keeps its inode")
					b, err := os.ReadFile(lock)
					require.NoError(t, err)
					assert.Equal(t, "contents\n", string(b))
				} else {
					r = rwRun(t, nil, argv...)
				}
				require.Equal(t, 0, r.code, r.stderr)
				return r, heldBy.ReplaceAllString(r.stdout, "held")
			}
			_, native := run(false)
			require.Equal(t, tc.want, native, "natively")
			r, out := run(true)
			assert.Equal(t, tc.want, out, "in a transaction")
			if tc.name == "F_GETLK through a read-only descriptor names the tree's lock" {
				assert.Equal(t, "held by -1\n", r.stdout, "an OFD lock, as docs/semantics.md §6 says")
			}
		})
	}
}

// TestTreeLocksThroughSharedDescriptions: processes of one transaction
// that lock a host file through an open file description shared with
// another descriptor of the tree — the shell's "exec 9<lockfile" before
// "flock 9", where the shell holds fd 9 and flock(1) inherits it — which
// stays on the unchanged original, exclude each other and the tree's other
// locks on the file as on Linux: the supervisor holds their locks on the
// staged copy (syscalls.TreeLocks). A lock goes when it is unlocked or the
// description's last descriptor is closed (the holding shell exits), and
// a blocking request waits until then. Each case runs natively and in a
// transaction with the same output.
func TestTreeLocksThroughSharedDescriptions(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3", "flock")
	// waits says whether the flock(1) process $pid waits in flock(2)
	// (73 on x86-64, also while the supervisor serves it) or has exited
	// (a zombie, or reaped by the shell).
	const waits = `while :; do
		case "$(cat /proc/$pid/syscall 2>/dev/null)" in "73 "*) echo "b waits"; break;; esac
		case "$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null)" in Z|"") echo "b did not wait"; break;; esac
	done`
	for _, tc := range []struct {
		name, script, want string
	}{
		{"flock -n fails until the holder unlocks", `
			(exec 9<lock; flock -n 9; echo "a $?"; echo x > held; read x < go; flock -u 9; echo "a unlocked"; echo x > held; read x < go) &
			exec 9<lock
			read x < held; flock -n 9; echo "b $?"; echo x > go
			read x < held; flock -n 9; echo "b $?"; echo x > go
			wait`, "a 0\nb 1\na unlocked\nb 0\n"},
		{"flock -n fails until the holder exits", `
			(exec 9<lock; flock -n 9; echo "a $?"; echo x > held; read x < go) &
			exec 9<lock
			read x < held; flock -n 9; echo "b $?"; echo x > go
			wait
			flock -n 9; echo "b $?"`, "a 0\nb 1\nb 0\n"},
		{"flock waits until the holder unlocks", `
			(exec 9<lock; flock 9; echo x > held; read x < go; echo "a unlocks"; flock -u 9; read x < go) &
			exec 9<lock
			read x < held
			flock 9 & pid=$!
			` + waits + `
			echo x > go
			wait $pid; echo "b $?"
			echo x > go; wait`, "b waits\na unlocks\nb 0\n"},
		{"flock waits until the holder exits", `
			(exec 9<lock; flock 9; echo x > held; read x < go; echo "a exits") &
			exec 9<lock
			read x < held
			flock 9 & pid=$!
			` + waits + `
			echo x > go
			wait $pid; echo "b $?"
			wait`, "b waits\na exits\nb 0\n"},
		{"a shared description excludes a flock(1) of the file", `
			(exec 9<lock; flock -n 9; echo "a $?"; echo x > held; read x < go) &
			read x < held; flock -n lock true; echo "b $?"; echo x > go
			wait
			flock -n lock true; echo "b $?"`, "a 0\nb 1\nb 0\n"},
		{"a flock(1) of the file excludes a shared description", `
			flock lock sh -c 'echo x > held; read x < go' &
			exec 9<lock
			read x < held; flock -n 9; echo "b $?"; echo x > go
			wait
			flock -n 9; echo "b $?"`, "b 1\nb 0\n"},
		{"a read lock through a shared description excludes a writer until unlocked", `python3 -c '
import fcntl, os
f = open("lock")
r, w = os.pipe()
keeper = os.fork()
if keeper == 0:
    os.read(r, 1)  # keeps the description shared
    os._exit(0)
fcntl.lockf(f, fcntl.LOCK_SH)
def other():
    pid = os.fork()
    if pid == 0:
        g = open("lock", "r+")
        try:
            fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB)
            print("locked", flush=True)
        except OSError:
            print("busy", flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
other()
fcntl.lockf(f, fcntl.LOCK_UN)
other()
os.write(w, b"x")
os.waitpid(keeper, 0)'`, "busy\nlocked\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := []string{"sh", "-c", `cd "$0" || exit` + "\n" + tc.script, ""}
			run := func(tx bool) string {
				dir := t.TempDir()
				lock := filepath.Join(dir, "lock")
				require.NoError(t, os.WriteFile(lock, []byte("contents\n"), 0o644))
				for _, p := range []string{"held", "go"} {
					mkfifo(t, filepath.Join(dir, p))
				}
				argv[3] = dir
				var r rwResult
				if tx {
					before := inode(t, lock)
					r = rwTx(t, t.TempDir(), nil, append([]string{"--"}, argv...)...)
					assert.Equal(t, before, inode(t, lock), "the lock file keeps its inode")
				} else {
					r = rwRun(t, nil, argv...)
				}
				require.Equal(t, 0, r.code, r.stderr)
				return r.stdout
			}
			require.Equal(t, tc.want, run(false), "natively")
			assert.Equal(t, tc.want, run(true), "in a transaction")
		})
	}

	t.Run("outside processes are excluded until the transaction ends", func(t *testing.T) {
		dir := t.TempDir()
		lock := filepath.Join(dir, "lock")
		require.NoError(t, os.WriteFile(lock, nil, 0o644))
		held := filepath.Join(dir, "held")
		mkfifo(t, held)
		tx := startTx(t, t.TempDir(), "sh", "-c", `exec 9<"$0"; flock 9; echo x > "$1"; read x; flock -u 9; echo x > "$1"; read x || true`, lock, held)
		readFIFO(t, held)
		assert.Equal(t, "busy", probe(t, "flock", lock), "while the transaction's process holds it")
		tx.proceed(t)
		readFIFO(t, held)
		assert.Equal(t, "busy", probe(t, "flock", lock), "after the process unlocked it, until the transaction ends")
		r := tx.wait()
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "locked", probe(t, "flock", lock), "once the transaction has ended")
	})
}
