package e2e

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// dpkg installs touch the real system: every package here is named
// txexec-test-* (or is Debian's hello, which must not be installed before
// the test) and is purged when the test ends.

func dpkgInstalled(t *testing.T, pkg string) bool {
	out, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return strings.Contains(string(out), "install ok installed")
}

func purgeAtEnd(t *testing.T, pkg string) {
	t.Cleanup(func() { exec.Command("dpkg", "--purge", pkg).Run() })
}

// buildDeb makes a package with nfiles files under /usr/share/PKG, a
// conffile /etc/PKG.conf and the given postinst.
func buildDeb(t *testing.T, pkg string, nfiles int, postinst string) string {
	requireTool(t, "dpkg-deb")
	dir := t.TempDir()
	root := filepath.Join(dir, pkg)
	must := func(err error) { require.NoError(t, err) }
	must(os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "usr/share", pkg), 0o755))
	must(os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	for i := 0; i < nfiles; i++ {
		must(os.WriteFile(filepath.Join(root, "usr/share", pkg, fmt.Sprintf("file-%03d", i)), []byte(strings.Repeat(fmt.Sprintf("%s %d\n", pkg, i), 20)), 0o644))
	}
	must(os.WriteFile(filepath.Join(root, "etc", pkg+".conf"), []byte("setting=1\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "DEBIAN/control"), []byte(fmt.Sprintf(
		"Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: txexec tests <tests@txexec.invalid>\nDescription: txexec test package\n", pkg)), 0o644))
	must(os.WriteFile(filepath.Join(root, "DEBIAN/conffiles"), []byte("/etc/"+pkg+".conf\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "DEBIAN/postinst"), []byte(postinst), 0o755))
	deb := filepath.Join(dir, pkg+".deb")
	out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", root, deb).CombinedOutput()
	require.NoError(t, err, "dpkg-deb: %s", out)
	return deb
}

// treeManifest records every entry under root: type, mode, owner, size,
// content hash, link target, mtime — for "byte-identical" checks.
func treeManifest(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d", p, info.Mode(), info.Size())
		if !info.IsDir() {
			line += fmt.Sprintf(" %d", info.ModTime().UnixNano())
		}
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			line += " -> " + l
		}
		out = append(out, line)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

func TestDpkgRealPackage(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	deb := downloadHello(t)
	purgeAtEnd(t, "hello")
	state := t.TempDir()

	r := rwTx(t, state, nil, "--", "dpkg", "-i", deb)
	require.Equal(t, 0, r.code, r.stderr)
	assert.True(t, dpkgInstalled(t, "hello"))
	out, err := exec.Command("/usr/bin/hello").Output()
	require.NoError(t, err)
	assert.Equal(t, "Hello, world!\n", string(out))
	v := rwRun(t, nil, "dpkg", "--verify", "hello")
	assert.Equal(t, 0, v.code, "dpkg --verify: %s%s", v.stdout, v.stderr)

	r = rwTx(t, state, nil, "--", "dpkg", "-r", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	assert.False(t, dpkgInstalled(t, "hello"))
	assert.NoFileExists(t, "/usr/bin/hello")
}

// downloadHello fetches Debian's hello package into a temporary directory
// and returns its path. The test must not run where hello is installed.
func downloadHello(t *testing.T) string {
	t.Helper()
	requireTool(t, "apt-get")
	if dpkgInstalled(t, "hello") {
		testenv.SkipOrFail(t, "hello is already installed on this machine; the test must not remove it")
	}
	dir := t.TempDir()
	cmd := exec.Command("apt-get", "download", "hello")
	cmd.Dir = dir
	if _, err := cmd.CombinedOutput(); err != nil {
		// Fetch the package index once, then retry.
		exec.Command("apt-get", "update", "-qq").Run()
		cmd = exec.Command("apt-get", "download", "hello")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "apt-get download hello: %s", out)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "hello_*.deb"))
	require.Len(t, debs, 1)
	return debs[0]
}

// postinstGate is a maintainer script's handshake with its test: the
// script writes to Ready once it runs and reads Go before it goes on
// (postinstWaits), so that the test acts while the script is in the middle
// of dpkg's run. Env hands the two FIFOs to the script.
type postinstGate struct{ Ready, Go string }

// postinstWaits is the start of a maintainer script that waits at a gate.
const postinstWaits = `#!/bin/sh
echo ready > "$TXEXEC_TEST_READY"
read go < "$TXEXEC_TEST_GO"
`

func newPostinstGate(t *testing.T) postinstGate {
	t.Helper()
	dir := t.TempDir()
	g := postinstGate{Ready: filepath.Join(dir, "ready"), Go: filepath.Join(dir, "go")}
	mkfifo(t, g.Ready)
	mkfifo(t, g.Go)
	return g
}

func (g postinstGate) Env() []string {
	return []string{"TXEXEC_TEST_READY=" + g.Ready, "TXEXEC_TEST_GO=" + g.Go}
}

// WaitReady blocks until the script has reached the gate (readGate).
func (g postinstGate) WaitReady(t *testing.T, ended <-chan struct{}, why func() string) {
	t.Helper()
	require.Equal(t, "ready\n", readGate(t, g.Ready, ended, why))
}

func TestDpkgFailingPostinstRollsBack(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	const pkg = "txexec-test-fail"
	// The postinst tells the test it runs, waits to be let go, then fails.
	deb := buildDeb(t, pkg, 200, postinstWaits+`echo "postinst: failing on purpose" >&2
exit 1
`)
	purgeAtEnd(t, pkg)
	gate := newPostinstGate(t)
	unrelated := fmt.Sprintf("/usr/share/txexec-test-unrelated-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(unrelated) })
	dpkgBefore := treeManifest(t, "/var/lib/dpkg")

	state := t.TempDir()
	run := startBackground(func() rwResult { return rwTx(t, state, gate.Env(), "--", "dpkg", "-i", deb) })
	gate.WaitReady(t, run.ended, run.why)

	// Mid-install, the rest of the machine sees none of it …
	assert.NoDirExists(t, "/usr/share/"+pkg)
	assert.NoFileExists(t, "/etc/"+pkg+".conf")
	assert.False(t, dpkgInstalled(t, pkg))
	assert.Equal(t, dpkgBefore, treeManifest(t, "/var/lib/dpkg"))
	// … and keeps working: an unrelated write in the same directory.
	require.NoError(t, os.WriteFile(unrelated, []byte("written during the install\n"), 0o644))

	require.NoError(t, os.WriteFile(gate.Go, []byte("go\n"), 0))
	r := run.result()
	assert.Equal(t, 1, r.code, "dpkg's own status: %s", r.stderr)
	assert.Contains(t, r.stderr, "aborted")

	assert.NoDirExists(t, "/usr/share/"+pkg)
	assert.NoFileExists(t, "/etc/"+pkg+".conf")
	assert.False(t, dpkgInstalled(t, pkg))
	assert.Equal(t, dpkgBefore, treeManifest(t, "/var/lib/dpkg"), "/var/lib/dpkg is byte-identical")
	b, err := os.ReadFile(unrelated)
	require.NoError(t, err, "the concurrent unrelated write survives the abort")
	assert.Equal(t, "written during the install\n", string(b))
}

func TestDpkgKilledThenRecovered(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	const pkg = "txexec-test-ok"
	deb := buildDeb(t, pkg, 50, "#!/bin/sh\nexit 0\n")
	purgeAtEnd(t, pkg)

	t.Run("killed before the commit point: absent", func(t *testing.T) {
		state := t.TempDir()
		before := treeManifest(t, "/var/lib/dpkg")
		r := rwTx(t, state, []string{"TXEXEC_FAULT=store.before-commit"}, "--", "dpkg", "-i", deb)
		require.Equal(t, 128+9, r.code, r.stderr)
		rec := rwTx(t, state, nil, "recover")
		require.Equal(t, 0, rec.code, rec.stderr)
		assert.False(t, dpkgInstalled(t, pkg))
		assert.NoDirExists(t, "/usr/share/"+pkg)
		assert.Equal(t, before, treeManifest(t, "/var/lib/dpkg"))
	})
	t.Run("killed from outside while the postinst runs: absent", func(t *testing.T) {
		// Not at a fault point of txexec's own: SIGKILL from outside, at
		// a moment of the package's choosing, with dpkg's database and
		// the package's files staged and a maintainer script running.
		const pkg = "txexec-test-killed"
		deb := buildDeb(t, pkg, 50, postinstWaits+"exit 0\n")
		purgeAtEnd(t, pkg)
		gate := newPostinstGate(t)
		state := t.TempDir()
		before := treeManifest(t, "/var/lib/dpkg")
		// The machine's own packages may already be in any state (a
		// half-configured man-db after an interrupted install elsewhere):
		// the kill must leave dpkg's audit exactly as it found it.
		auditBefore := rwRun(t, nil, "dpkg", "--audit")

		cmd := exec.Command(txexecBin, "--", "dpkg", "-i", deb)
		cmd.Env = append(append(os.Environ(), "TXEXEC_STATE_DIR="+state), gate.Env()...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		ended := make(chan struct{})
		var waitErr error
		go func() {
			waitErr = cmd.Wait()
			close(ended)
		}()
		gate.WaitReady(t, ended, func() string { return fmt.Sprintf("%v: %s", waitErr, stderr.String()) })
		assert.NoDirExists(t, "/usr/share/"+pkg, "outside the transaction nothing shows yet")
		require.True(t, anyProcessMentions(t, pkg), "dpkg runs")
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		<-ended
		err := waitErr
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
		require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
		// The tree dies with txexec (PTRACE_O_EXITKILL): no dpkg is left
		// holding its lock, no postinst waiting for the go-ahead.
		waitFor(t, "dpkg and its postinst to die", func() bool { return !anyProcessMentions(t, pkg) })

		rec := rwTx(t, state, nil, "recover")
		require.Equal(t, 0, rec.code, rec.stderr)
		assert.False(t, dpkgInstalled(t, pkg))
		assert.NoDirExists(t, "/usr/share/"+pkg)
		assert.NoFileExists(t, "/etc/"+pkg+".conf")
		assert.Equal(t, before, treeManifest(t, "/var/lib/dpkg"), "/var/lib/dpkg is byte-identical")
		a := rwRun(t, nil, "dpkg", "--audit")
		assert.Equal(t, auditBefore, a, "dpkg's audit of its database is what it was before the install")
		assert.NotContains(t, a.stdout, pkg)
	})
	for _, k := range []int{1, 5, 40} {
		t.Run(fmt.Sprintf("killed at write-through step %d: recovery installs it all", k), func(t *testing.T) {
			state := t.TempDir()
			r := rwTx(t, state, []string{fmt.Sprintf("TXEXEC_FAULT=txn.apply.before-op@%d", k)}, "--", "dpkg", "-i", deb)
			require.Equal(t, 128+9, r.code, r.stderr)
			rec := rwTx(t, state, nil, "recover")
			require.Equal(t, 0, rec.code, rec.stderr)
			require.True(t, dpkgInstalled(t, pkg))
			v := rwRun(t, nil, "dpkg", "--verify", pkg)
			assert.Equal(t, 0, v.code, "dpkg's database agrees with the files: %s%s", v.stdout, v.stderr)
			entries, err := os.ReadDir("/usr/share/" + pkg)
			require.NoError(t, err)
			assert.Len(t, entries, 50)
			require.NoError(t, exec.Command("dpkg", "--purge", pkg).Run())
		})
	}
}

// anyProcessMentions reports whether a process's command line mentions s.
func anyProcessMentions(t *testing.T, s string) bool {
	for _, pid := range allPids(t) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// TestDpkgInstallUndone: dpkg -i under txexec, then an unrelated file made
// elsewhere, then txexec undo of the install: /var/lib/dpkg is
// byte-identical to before it, no file of the package remains, dpkg's
// audit is as it was, and the unrelated file is still there.
func TestDpkgInstallUndone(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	deb := downloadHello(t)
	purgeAtEnd(t, "hello")
	state := t.TempDir()
	dpkgBefore := treeManifest(t, "/var/lib/dpkg")
	auditBefore := rwRun(t, nil, "dpkg", "--audit")

	r := rwTx(t, state, nil, "--", "dpkg", "-i", deb)
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, dpkgInstalled(t, "hello"))
	id := lastTx(t, state)
	list, err := exec.Command("dpkg", "-L", "hello").Output()
	require.NoError(t, err)
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		if fi, err := os.Lstat(f); err == nil && !fi.IsDir() {
			files = append(files, f)
		}
	}
	require.NotEmpty(t, files)
	require.FileExists(t, "/usr/bin/hello")

	unrelated := fmt.Sprintf("/usr/local/share/txexec-test-unrelated-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(unrelated) })
	require.NoError(t, os.WriteFile(unrelated, []byte("made after the install\n"), 0o644))

	u := rwTx(t, state, nil, "undo", fmt.Sprint(id))
	require.Equal(t, 0, u.code, u.stderr)
	assert.Equal(t, dpkgBefore, treeManifest(t, "/var/lib/dpkg"), "/var/lib/dpkg is byte-identical to before the install")
	assert.False(t, dpkgInstalled(t, "hello"))
	for _, f := range files {
		assert.NoFileExists(t, f, "a file of the package")
	}
	assert.NoDirExists(t, "/usr/share/doc/hello")
	assert.Equal(t, auditBefore, rwRun(t, nil, "dpkg", "--audit"), "dpkg's audit is as before the install")
	b, err := os.ReadFile(unrelated)
	require.NoError(t, err, "the unrelated file survives the undo")
	assert.Equal(t, "made after the install\n", string(b))
}
