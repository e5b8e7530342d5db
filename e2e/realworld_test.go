package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// Issue 6: real programs nobody here wrote, and the attacks txexec exists
// to stop. These tests use real system paths only where they must (dpkg
// installs), with packages named txexec-test-*, and clean up.

// rwResult is one finished command.
type rwResult struct {
	stdout, stderr string
	code           int
}

// rwRun runs argv with extra environment and returns its outcome.
func rwRun(t *testing.T, env []string, argv ...string) rwResult {
	t.Helper()
	// Every command is bounded: a test that fails half-way must not leave
	// another blocked forever on a FIFO.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		ws := ee.Sys().(syscall.WaitStatus)
		code = ws.ExitStatus()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	return rwResult{out.String(), errb.String(), code}
}

// rwTx runs txexec with a private state directory.
func rwTx(t *testing.T, state string, env []string, args ...string) rwResult {
	t.Helper()
	return rwRun(t, append(env, "TXEXEC_STATE_DIR="+state), append([]string{txexecBin}, args...)...)
}

// rwCompile builds a C fixture from testdata into dir.
func rwCompile(t *testing.T, src, dir string) string {
	t.Helper()
	requireTool(t, "cc")
	bin := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
	out, err := exec.Command("cc", "-O2", "-Wall", "-o", bin, filepath.Join("testdata", src)).CombinedOutput()
	require.NoError(t, err, "compile %s: %s", src, out)
	return bin
}

// requireTool skips without the tool, except in CI, where it fails.
func requireTool(t *testing.T, name string) {
	t.Helper()
	requireTools(t, name)
}

// gateTimeout bounds a test's wait for a program to reach a gate: the
// programs reach theirs within seconds.
const gateTimeout = 3 * time.Minute

// readGate returns what a program under test writes to the FIFO p once it
// reaches a point of the test's choosing (and closes it). It fails the test
// instead when ended closes first — the program ended without reaching the
// gate: dpkg found its lock taken, a victim failed its check — or after
// gateTimeout; why says what the program printed. Without it such a test
// waits for ever, until the package's timeout.
func readGate(t *testing.T, p string, ended <-chan struct{}, why func() string) string {
	t.Helper()
	type read struct {
		b   []byte
		err error
	}
	got := make(chan read, 1)
	go func() {
		b, err := os.ReadFile(p)
		got <- read{b, err}
	}()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		return string(r.b)
	case <-ended:
		releaseFIFO(p) // the reader above, which the program never met
		require.FailNow(t, "the program ended before it reached the gate "+p, "%s", why())
	case <-time.After(gateTimeout):
		releaseFIFO(p)
		require.FailNow(t, "the program did not reach the gate "+p, "after %v", gateTimeout)
	}
	return ""
}

// mkfifo makes a FIFO, and on cleanup opens it read-write without blocking
// and writes a byte, so that nobody stays blocked on it after a failure.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	require.NoError(t, unix.Mkfifo(p, 0o666))
	require.NoError(t, os.Chmod(p, 0o666))
	t.Cleanup(func() { releaseFIFO(p) })
}

// releaseFIFO lets whoever is blocked on FIFO p go: it opens p read-write
// without blocking (which completes a blocked open at either end) and
// writes a byte (which ends a blocked read).
func releaseFIFO(p string) {
	if fd, err := unix.Open(p, unix.O_RDWR|unix.O_NONBLOCK, 0); err == nil {
		unix.Write(fd, []byte("x"))
		unix.Close(fd)
	}
}

// publicTempDir is a temporary directory other users can reach (Go's
// t.TempDir sits in a directory only its owner can search).
func publicTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "txexec-e2e-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(d, 0o755))
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// tocttouScene is a victim's directory owned by the attacker (uid 1000),
// holding the file the victim will check and write, a secret it must
// never write, and the two FIFOs that hold the window open.
type tocttouScene struct {
	dir, target, secret, ready, goFIFO string
}

func newTocttouScene(t *testing.T, targetUID int) tocttouScene {
	base := publicTempDir(t)
	s := tocttouScene{
		dir:    filepath.Join(base, "reports"),
		secret: filepath.Join(base, "secret"),
		ready:  filepath.Join(base, "ready"),
		goFIFO: filepath.Join(base, "go"),
	}
	s.target = filepath.Join(s.dir, "report")
	require.NoError(t, os.Mkdir(s.dir, 0o755))
	require.NoError(t, os.Chown(s.dir, 1000, 1000))
	require.NoError(t, os.WriteFile(s.target, []byte("old report\n"), 0o644))
	require.NoError(t, os.Chown(s.target, targetUID, targetUID))
	require.NoError(t, os.WriteFile(s.secret, []byte("secret\n"), 0o600))
	mkfifo(t, s.ready)
	mkfifo(t, s.goFIFO)
	return s
}

// attack waits until the victim has checked, swaps the name for a symlink
// to the secret (as the attacker, uid 1000, in its own directory), and lets
// the victim go on. run is the victim's run, started in the background; it
// must not be read before attack returns.
func (s tocttouScene) attack(t *testing.T, run *bgRun) {
	require.Equal(t, "checked\n", readGate(t, s.ready, run.ended, run.why))
	out, err := exec.Command("setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups",
		"sh", "-c", `rm -f "$1" && ln -s "$2" "$1"`, "sh", s.target, s.secret).CombinedOutput()
	require.NoError(t, err, "attacker: %s", out)
	require.NoError(t, os.WriteFile(s.goFIFO, []byte("g"), 0))
}

// bgRun is a program run in the background (startBackground) while the
// test does its part, which takes its result afterwards (result).
type bgRun struct {
	r     rwResult
	ended chan struct{}
}

func startBackground(run func() rwResult) *bgRun {
	v := &bgRun{ended: make(chan struct{})}
	go func() {
		// Deferred: a run that fails the test with t.Fatal ends this
		// goroutine (runtime.Goexit), and the test must still see it end.
		defer close(v.ended)
		v.r = run()
	}()
	return v
}

// why is what the program printed, once it has ended.
func (v *bgRun) why() string { return fmt.Sprintf("status %d: %s%s", v.r.code, v.r.stdout, v.r.stderr) }

// result waits for the program's end.
func (v *bgRun) result() rwResult {
	<-v.ended
	return v.r
}

func TestTOCTTOUSymlinkSwap(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTool(t, "setpriv")
	tmp := publicTempDir(t)
	victim := rwCompile(t, "tocttou_victim.c", tmp)
	suid := filepath.Join(tmp, "victim-suid")
	require.NoError(t, exec.Command("cp", victim, suid).Run())
	require.NoError(t, unix.Chmod(suid, 0o4755)) // owned by root: set-user-ID root

	cases := []struct {
		name      string
		targetUID int
		argv      func(s tocttouScene) []string
		// ids is what the victim reports: it must hold root's power for
		// the attack to mean anything.
		ids string
	}{
		// A root program that writes a report owned by root in a
		// directory the attacker controls.
		{"root victim", 0, func(s tocttouScene) []string { return []string{victim, s.target, s.ready, s.goFIFO} }, "uid=0 euid=0"},
		// The textbook case: a set-user-ID-root program started by the
		// attacker, checking the file belongs to its real user. Under
		// txexec too the set-user-ID bit must take effect (a root txexec
		// without no_new_privs), or the case would prove nothing.
		{"setuid victim run by a user", 1000, func(s tocttouScene) []string {
			return append(append([]string{}, unprivileged...), suid, s.target, s.ready, s.goFIFO)
		}, "uid=1000 euid=0"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/native is exploitable", func(t *testing.T) {
			s := newTocttouScene(t, tc.targetUID)
			run := startBackground(func() rwResult { return rwRun(t, nil, tc.argv(s)...) })
			s.attack(t, run)
			r := run.result()
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "victim: "+tc.ids+"\n", r.stdout)
			secret, err := os.ReadFile(s.secret)
			require.NoError(t, err)
			assert.Equal(t, "written by the victim\n", string(secret), "natively the swap redirects the write")
		})
		for _, opts := range [][]string{{"--no-fast-lookups"}, {"--fast-lookups"}} {
			t.Run(tc.name+"/txexec is not"+strings.Join(append([]string{""}, opts...), " "), func(t *testing.T) {
				s := newTocttouScene(t, tc.targetUID)
				state := t.TempDir()
				run := startBackground(func() rwResult { return rwTx(t, state, nil, append(append(opts, "--"), tc.argv(s)...)...) })
				s.attack(t, run)
				r := run.result()
				assert.Equal(t, "victim: "+tc.ids+"\n", r.stdout, "the victim runs with the same credentials as natively")
				secret, err := os.ReadFile(s.secret)
				require.NoError(t, err)
				assert.Equal(t, "secret\n", string(secret), "the secret must never be written")
				// The victim wrote the file it checked, in its view; the
				// attacker's swap happened meanwhile, so the transaction is
				// serialized before the attacker: it cannot commit.
				assert.Equal(t, 75, r.code, "stderr: %s", r.stderr)
				assert.Contains(t, r.stderr, "conflict on "+s.target)
				link, err := os.Readlink(s.target)
				require.NoError(t, err, "the attacker's own change survives")
				assert.Equal(t, s.secret, link)
			})
		}
	}
}

// useraddRoot copies the account files into a fresh prefix for useradd -P.
func useraddRoot(t *testing.T) string {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/default"), 0o755))
	for _, f := range []string{"passwd", "shadow", "group", "gshadow", "login.defs", "default/useradd"} {
		b, err := os.ReadFile("/etc/" + f)
		if os.IsNotExist(err) && f == "default/useradd" {
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, "etc", f), b, 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(root, "etc/shadow"), 0o640))
	require.NoError(t, os.Chmod(filepath.Join(root, "etc/gshadow"), 0o640))
	return root
}

var accountFiles = []string{"passwd", "shadow", "group", "gshadow"}

func readAccounts(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	for _, f := range accountFiles {
		b, err := os.ReadFile(filepath.Join(root, "etc", f))
		require.NoError(t, err)
		out[f] = string(b)
	}
	return out
}

func TestUseraddChangesAccountFilesTogether(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTool(t, "useradd")
	// What useradd does natively, for comparison.
	native := useraddRoot(t)
	before := readAccounts(t, native)
	r := rwRun(t, nil, "useradd", "-P", native, "txexec-test-user")
	require.Equal(t, 0, r.code, r.stderr)
	want := readAccounts(t, native)
	for _, f := range accountFiles {
		require.NotEqual(t, before[f], want[f], "useradd changes %s", f)
	}
	// Days since the epoch in shadow differ between runs only across
	// midnight; compare with the native result of this same test.

	t.Run("committed", func(t *testing.T) {
		root := useraddRoot(t)
		r := rwTx(t, t.TempDir(), nil, "--", "useradd", "-P", root, "txexec-test-user")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, want, readAccounts(t, root))
	})
	t.Run("killed before the commit point: none changes", func(t *testing.T) {
		root := useraddRoot(t)
		state := t.TempDir()
		r := rwTx(t, state, []string{"TXEXEC_FAULT=store.before-commit"}, "--", "useradd", "-P", root, "txexec-test-user")
		require.Equal(t, 128+9, r.code, "txexec killed itself: %s", r.stderr)
		assert.Equal(t, before, readAccounts(t, root))
		rec := rwTx(t, state, nil, "recover")
		require.Equal(t, 0, rec.code, rec.stderr)
		assert.Equal(t, before, readAccounts(t, root))
	})
	t.Run("killed during write-through: recovery finishes all", func(t *testing.T) {
		root := useraddRoot(t)
		state := t.TempDir()
		r := rwTx(t, state, []string{"TXEXEC_FAULT=txn.apply.before-op@2"}, "--", "useradd", "-P", root, "txexec-test-user")
		require.Equal(t, 128+9, r.code, "txexec killed itself: %s", r.stderr)
		rec := rwTx(t, state, nil, "recover")
		require.Equal(t, 0, rec.code, rec.stderr)
		assert.Equal(t, want, readAccounts(t, root))
	})
}
