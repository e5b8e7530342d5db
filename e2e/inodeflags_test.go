package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// inodeFlagsProbe tries every kind of change on immutable (chattr +i) and
// append-only (chattr +a) files and directories and prints what it got.
const inodeFlagsProbe = `
import errno, os, sys
def probe(what, fn):
    try:
        fn()
        r = "ok"
    except OSError as e:
        r = errno.errorcode[e.errno]
    print(what + ": " + r)
def opener(path, flags):
    return lambda: os.close(os.open(path, flags))
for f in ("imm", "app"):
    probe(f + " read", opener(f, os.O_RDONLY))
    probe(f + " write", opener(f, os.O_WRONLY))
    probe(f + " append+trunc", opener(f, os.O_WRONLY | os.O_APPEND | os.O_TRUNC))
    probe(f + " truncate", lambda: os.truncate(f, 0))
    probe(f + " chmod", lambda: os.chmod(f, 0o600))
    probe(f + " chown", lambda: os.chown(f, 1, 1))
    probe(f + " explicit times", lambda: os.utime(f, (1, 1)))
    probe(f + " setxattr", lambda: os.setxattr(f, "user.k", b"v"))
    probe(f + " link", lambda: os.link(f, f + ".link"))
    probe(f + " rename", lambda: os.rename(f, f + ".moved"))
    probe(f + " replace", lambda: os.rename("plain", f))
    probe(f + " unlink", lambda: os.unlink(f))
probe("imm touch", lambda: os.utime("imm", None))
probe("immdir create", opener("immdir/new", os.O_WRONLY | os.O_CREAT))
probe("immdir mkdir", lambda: os.mkdir("immdir/sub"))
probe("immdir unlink", lambda: os.unlink("immdir/inside"))
def rewrite(path):
    def fn():
        with open(path, "w") as f:
            f.write("rewritten\n")
    return fn
probe("immdir write inside", rewrite("immdir/inside"))
probe("appdir write inside", rewrite("appdir/inside"))
probe("appdir create", opener("appdir/new", os.O_WRONLY | os.O_CREAT))
probe("appdir unlink", lambda: os.unlink("appdir/inside"))
probe("appdir rename out", lambda: os.rename("appdir/inside", "out"))
`

// setupInodeFlags makes the probe's fixture in dir and removes the flags
// again when the test ends (or the directory could not be removed).
func setupInodeFlags(t *testing.T, dir string) {
	writeFiles(t, dir, map[string]string{
		"imm": "immutable\n", "app": "append-only\n", "plain": "plain\n",
		"immdir/inside": "in immutable dir\n", "appdir/inside": "in append-only dir\n",
	})
	chattr := func(args ...string) {
		out, err := exec.Command("chattr", args...).CombinedOutput()
		if err != nil {
			testenv.SkipOrFail(t, "chattr %v: %v: %s (the file system must support inode flags)", args, err, out)
		}
	}
	t.Cleanup(func() {
		exec.Command("chattr", "-R", "-i", "-a", dir).Run()
	})
	chattr("+i", filepath.Join(dir, "imm"), filepath.Join(dir, "immdir"))
	chattr("+a", filepath.Join(dir, "app"), filepath.Join(dir, "appdir"))
}

// TestInodeFlags: immutable and append-only files and directories refuse
// the same changes, with the same errno, inside a transaction as natively
// (the transaction's checks are the kernel's: the host originals are never
// written, so nothing else would stop them), and the transaction changes
// nothing that a commit would then fail to write through.
func TestInodeFlags(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3", "chattr")
	var outs [2]string
	for i, m := range []mode{native, transaction} {
		dir := filepath.Join(t.TempDir(), "work")
		require.NoError(t, os.Mkdir(dir, 0o755))
		setupInodeFlags(t, dir)
		got := run(t, m, command{Argv: []string{"python3", "-c", inodeFlagsProbe}, Dir: dir})
		require.Equal(t, 0, got.Status, "%s: stderr:\n%s", m, got.Stderr)
		assert.Empty(t, got.Stderr, "%s", m)
		outs[i] = got.Stdout
		for _, f := range []string{"immdir/inside", "appdir/inside"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			require.NoError(t, err)
			assert.Equal(t, "rewritten\n", string(b), "%s: %s is written back in place", m, f)
		}
	}
	assert.Contains(t, outs[0], "imm write: EPERM\n", "native sanity: the flags are in force")
	assert.Equal(t, outs[0], outs[1], "the same answers in a transaction")
}

// TestAppendOnlyAppendUnsupported: appending to an append-only file, which
// Linux allows, cannot be committed (write-through replaces the file), so
// a transaction refuses it by --unsupported rather than fail after its
// commit point.
func TestAppendOnlyAppendUnsupported(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "chattr")
	dir := filepath.Join(t.TempDir(), "work")
	require.NoError(t, os.Mkdir(dir, 0o755))
	setupInodeFlags(t, dir)
	script := `echo more >> app; echo "status $?"`

	native := run(t, native, command{Argv: []string{"sh", "-c", script}, Dir: dir})
	assert.Equal(t, "status 0\n", native.Stdout)

	dir2 := filepath.Join(t.TempDir(), "work")
	require.NoError(t, os.Mkdir(dir2, 0o755))
	setupInodeFlags(t, dir2)
	got := run(t, transaction, command{Argv: []string{"sh", "-c", script}, Dir: dir2})
	assert.NotEqual(t, 0, got.Status, "the transaction aborts; stderr:\n%s", got.Stderr)
	assert.Contains(t, got.Stderr, "the append-only file "+filepath.Join(dir2, "app")+" is not supported in a transaction")
	b, err := os.ReadFile(filepath.Join(dir2, "app"))
	require.NoError(t, err)
	assert.Equal(t, "append-only\n", string(b), "nothing written")

	got = run(t, transaction, command{Argv: []string{"sh", "-c", script}, Dir: dir2, TxArgs: []string{"--unsupported=error"}})
	assert.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
	assert.NotEqual(t, "status 0\n", got.Stdout, "the open fails and the shell goes on")
	assert.Contains(t, got.Stderr, "Operation not supported")
}

// TestInodeFlagsSetInTransaction: chattr +i and +a on files and a
// directory the transaction itself made are in force inside it, and its
// commit places them and then sets the flags (a staged object that kept
// them could not be renamed into place after the commit point, which left
// the state directory failing in recovery). An aborted transaction leaves
// nothing, not even its staging area.
func TestInodeFlagsSetInTransaction(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "chattr", "lsattr")
	script := `set -e
printf 'nameserver 192.0.2.1\n' > resolv.conf
chattr +i resolv.conf
printf 'one\n' > log
chattr +a log
printf 'two\n' >> log
mkdir sealed
echo in > sealed/f
chattr +i sealed
mkdir -p deep/er
echo x > deep/er/g
chattr +a deep/er/g deep
if rm -f resolv.conf 2>/dev/null; then echo "rm allowed"; fi
if touch sealed/new 2>/dev/null; then echo "create allowed"; fi
lsattr -d resolv.conf log sealed deep deep/er/g | cut -c5,6
`
	state := t.TempDir()
	env := []string{"TXEXEC_STATE_DIR=" + state}
	want := "i-\n-a\ni-\n-a\n-a\n"
	for _, onExit := range []string{"abort", "commit"} {
		dir := filepath.Join(t.TempDir(), "work")
		require.NoError(t, os.Mkdir(dir, 0o755))
		t.Cleanup(func() { exec.Command("chattr", "-R", "-i", "-a", dir).Run() })
		got := run(t, transaction, command{Argv: []string{"sh", "-c", script}, Dir: dir, Env: env,
			TxArgs: []string{"--on-exit=" + onExit}})
		require.Equal(t, 0, got.Status, "%s: stderr:\n%s", onExit, got.Stderr)
		assert.Equal(t, want, got.Stdout, "%s: the flags are in force in the transaction", onExit)
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		if onExit == "abort" {
			assert.Empty(t, ents, "an aborted transaction leaves nothing")
			continue
		}
		lsattr := exec.Command("lsattr", "-d", "resolv.conf", "log", "sealed", "deep", "deep/er/g")
		lsattr.Dir = dir
		out, err := lsattr.Output()
		require.NoError(t, err)
		var flags string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			flags += l[4:6] + "\n"
		}
		assert.Equal(t, want, flags, "the flags are committed")
		for f, content := range map[string]string{"resolv.conf": "nameserver 192.0.2.1\n", "log": "one\ntwo\n", "sealed/f": "in\n", "deep/er/g": "x\n"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			require.NoError(t, err)
			assert.Equal(t, content, string(b), f)
		}
	}
	staged, err := os.ReadDir(filepath.Join(state, "staging"))
	if err == nil {
		assert.Empty(t, staged, "no staging area is left behind")
	}
	got := run(t, transaction, command{Argv: []string{"true"}, Dir: t.TempDir(), Env: env})
	assert.Equal(t, 0, got.Status, "the state directory stays usable; stderr:\n%s", got.Stderr)
}

// TestInodeFlagReachingTheHostRefusesCommit: a host directory made
// immutable from outside while the transaction runs (inside, chattr of a
// host directory follows --unsupported: its staged copy is never put in
// place) makes a commit that would create an entry in it be refused before
// its commit point (exit 70, nothing written), instead of failing after it
// and leaving the state directory stuck in recovery.
func TestInodeFlagReachingTheHostRefusesCommit(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "chattr")
	dir := filepath.Join(t.TempDir(), "work")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "hd"), 0o755))
	t.Cleanup(func() { exec.Command("chattr", "-R", "-i", "-a", dir).Run() })
	// Two FIFOs on the host, which the transaction opens as they are:
	// "made" says hd/new is made, "go" lets the transaction end.
	for _, f := range []string{"made", "go"} {
		require.NoError(t, unix.Mkfifo(filepath.Join(dir, f), 0o600))
	}
	env := []string{"TXEXEC_STATE_DIR=" + t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := newCmd(ctx, t, transaction, command{Argv: []string{"sh", "-c", "touch hd/new && echo > made && read x < go"}, Dir: dir, Env: env})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	made, err := os.ReadFile(filepath.Join(dir, "made"))
	require.NoError(t, err)
	require.Equal(t, "\n", string(made))
	out, err := exec.Command("chattr", "+i", filepath.Join(dir, "hd")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte("\n"), 0o600))
	cmd.Wait()
	assert.Equal(t, 70, statusOf(cmd.ProcessState), "stderr:\n%s", stderr.String())
	assert.Contains(t, stderr.String(), filepath.Join(dir, "hd")+" is immutable (chattr +i) and cannot be changed; nothing was committed")
	assert.NoFileExists(t, filepath.Join(dir, "hd", "new"))
	got := run(t, transaction, command{Argv: []string{"true"}, Dir: dir, Env: env})
	assert.Equal(t, 0, got.Status, "the state directory stays usable; stderr:\n%s", got.Stderr)
}

// TestInodeAttrIoctlThroughReadOnlyFD: chattr needs no write access, only
// ownership, so FS_IOC_SETFLAGS through a read-only descriptor of an
// unchanged host file must not reach the host before the commit: under
// --on-exit=abort lsattr of the file is unchanged, for root and for an
// unprivileged owner; a committing transaction applies chattr +A at its
// commit; a caller who does not own the file gets EPERM, as natively; a
// host directory, whose staged copy is never put in place, follows
// --unsupported.
func TestInodeAttrIoctlThroughReadOnlyFD(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "chattr", "lsattr", "setpriv")
	lsattr := func(t *testing.T, path string) string {
		t.Helper()
		out, err := exec.Command("lsattr", "-d", path).Output()
		require.NoError(t, err)
		return strings.Fields(string(out))[0]
	}
	for _, user := range []struct {
		name   string
		prefix []string
	}{{"root", nil}, {"owner uid 1000", unprivileged}} {
		t.Run(user.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "work")
			require.NoError(t, os.Mkdir(dir, 0o755))
			writeFiles(t, dir, map[string]string{"f": "data\n", "sub/": ""})
			require.NoError(t, os.Chown(filepath.Join(dir, "f"), 1000, 1000))
			openToOthers(t, dir)
			t.Cleanup(func() { exec.Command("chattr", "-R", "-i", "-a", "-A", dir).Run() })
			f := filepath.Join(dir, "f")
			before := lsattr(t, f)
			require.NotContains(t, before, "A")
			argv := append(append([]string{}, user.prefix...), "sh", "-c", "chattr +A f && lsattr f | cut -c8")

			got := run(t, transaction, command{Argv: argv, Dir: dir, TxArgs: []string{"--on-exit=abort"}})
			assert.Equal(t, "A\n", got.Stdout, "in force in the transaction; stderr:\n%s", got.Stderr)
			assert.Equal(t, before, lsattr(t, f), "the aborted transaction left the host file's flags")

			got = run(t, transaction, command{Argv: argv, Dir: dir, TxArgs: []string{"--on-exit=commit"}})
			require.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
			assert.Contains(t, lsattr(t, f), "A", "committed")
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			assert.Equal(t, "data\n", string(b))
		})
	}

	t.Run("not the owner", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "work")
		require.NoError(t, os.Mkdir(dir, 0o755))
		writeFiles(t, dir, map[string]string{"f": "data\n"})
		openToOthers(t, dir)
		argv := append(append([]string{}, unprivileged...), "sh", "-c", "chattr +A f 2>&1 | sed 's/.*: //'")
		want := run(t, native, command{Argv: argv, Dir: dir})
		require.Equal(t, "Operation not permitted while setting flags on f\n", want.Stdout)
		got := run(t, transaction, command{Argv: argv, Dir: dir, TxArgs: []string{"--on-exit=abort"}})
		assert.Equal(t, want.Stdout, got.Stdout)
	})

	t.Run("host directory follows --unsupported", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "work")
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
		t.Cleanup(func() { exec.Command("chattr", "-A", filepath.Join(dir, "d")).Run() })
		before := lsattr(t, filepath.Join(dir, "d"))
		got := run(t, transaction, command{Argv: []string{"chattr", "+A", "d"}, Dir: dir, TxArgs: []string{"--on-exit=commit", "--unsupported=error"}})
		assert.NotEqual(t, 0, got.Status)
		assert.Regexp(t, `(?m)^txexec: pid [0-9]+ called ioctl\(FS_IOC_SETFLAGS\): changing the inode attributes of the host object `+regexp.QuoteMeta(filepath.Join(dir, "d"))+` is not supported in a transaction; it fails with ENOTSUP \(--unsupported=error\)$`, got.Stderr)
		got = run(t, transaction, command{Argv: []string{"chattr", "+A", "d"}, Dir: dir, TxArgs: []string{"--on-exit=commit"}})
		assert.Regexp(t, `txexec: transaction [0-9]+ aborted: pid [0-9]+ called ioctl\(FS_IOC_SETFLAGS\)`, got.Stderr)
		assert.Equal(t, before, lsattr(t, filepath.Join(dir, "d")))
	})
}

// TestInodeGenerationThroughReadOnlyFD: the generation ext4 keeps per
// inode is set through a read-only descriptor by FS_IOC_SETVERSION and by
// ext4's own EXT4_IOC_SETVERSION (_IOW('f', 4, long)); neither may reach
// the host before the commit: under --on-exit=abort the host file keeps
// its generation while the transaction sees the new one (through a new
// descriptor: the one it had stays on the original).
func TestInodeGenerationThroughReadOnlyFD(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "python3")
	const script = `import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.ioctl(fd, int(sys.argv[2], 0), struct.pack("l", 12345))
fd = os.open(sys.argv[1], os.O_RDONLY)
print(struct.unpack("l", fcntl.ioctl(fd, 0x80087601, struct.pack("l", 0)))[0])
`
	generation := func(t *testing.T, path string) int64 {
		t.Helper()
		fd, err := unix.Open(path, unix.O_RDONLY, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		v, err := unix.IoctlGetInt(fd, 0x80087601) // FS_IOC_GETVERSION
		if err == unix.ENOTTY || err == unix.EOPNOTSUPP {
			t.Skipf("no inode generation on this file system: %v", err)
		}
		require.NoError(t, err)
		return int64(v)
	}
	for _, req := range []struct{ name, value string }{
		{"FS_IOC_SETVERSION", "0x40087602"},
		{"EXT4_IOC_SETVERSION", "0x40086604"},
	} {
		t.Run(req.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "f")
			require.NoError(t, os.WriteFile(f, []byte("data\n"), 0o644))
			before := generation(t, f)
			if before == 12345 {
				t.Skip("the file has the generation the test sets")
			}
			got := run(t, transaction, command{Argv: []string{"python3", "-c", script, f, req.value}, Dir: dir, TxArgs: []string{"--on-exit=abort"}})
			assert.Equal(t, "12345\n", got.Stdout, "in force in the transaction; stderr:\n%s", got.Stderr)
			assert.Equal(t, before, generation(t, f), "the aborted transaction left the host file's generation")
		})
	}
}
