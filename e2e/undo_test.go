package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// undoManifest is snapshotTree plus what undo also puts back: the mtime
// of every non-directory, extended attributes and inode flags. Inode
// numbers are left out (a removed directory comes back as a new one) and
// so are directories' times (their entries moved them).
func undoManifest(t *testing.T, root string) []string {
	t.Helper()
	out := snapshotTree(t, root, nil)
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if !info.IsDir() {
			out = append(out, fmt.Sprintf("mtime %s %d", rel, info.ModTime().UnixNano()))
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil && n > 0 {
			names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
			sort.Strings(names)
			for _, name := range names {
				v := make([]byte, 4096)
				m, _ := unix.Lgetxattr(p, name, v)
				out = append(out, fmt.Sprintf("xattr %s %s=%q", rel, name, v[:max(m, 0)]))
			}
		}
		if info.Mode().IsRegular() || info.IsDir() {
			if fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				f, _ := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
				unix.Close(fd)
				out = append(out, fmt.Sprintf("flags %s %#x", rel, f&0x30)) // immutable, append-only
			}
		}
		return nil
	})
	require.NoError(t, err)
	// Staging and undo areas at a mount root are txexec's.
	kept := out[:0]
	for _, l := range out {
		if !areaInManifest.MatchString(l) {
			kept = append(kept, l)
		}
	}
	sort.Strings(kept)
	return kept
}

var areaInManifest = regexp.MustCompile(`(^| )\.txexec-(staging|undo)-`)

// clearTestFlags clears chattr +i and +a under root, so that the test's
// temporary directory can be removed.
func clearTestFlags(root string) {
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && (info.Mode().IsRegular() || info.IsDir()) {
			exec.Command("chattr", "-i", "-a", p).Run()
		}
		return nil
	})
}

// txIDIn finds "transaction N" in a txexec message.
func txIDIn(t *testing.T, s, pattern string) int64 {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	require.NotNil(t, m, "%q in %q", pattern, s)
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return id
}

// lastTx is the id of the newest transaction in state.
func lastTx(t *testing.T, state string) int64 {
	t.Helper()
	r := rwTx(t, state, nil, "log")
	require.Equal(t, 0, r.code, r.stderr)
	return txIDIn(t, r.stdout, `^(\d+) `)
}

// undoScript changes a tree in every way undo puts back: a file replaced,
// one removed, one made, a directory tree made and one removed, a rename,
// a chmod, a chown, an in-place write to a file with two links, a
// symlink replaced, inode flags and extended attributes, a directory
// made and removed again, one removed and made again.
const undoScript = `set -e
echo replaced > replaced
rm removed
mkdir -p made/deep && echo new > made/deep/file
rm -r gone
mv moved moved-to
chmod 600 mode
chown 1:1 owner
echo more >> linked
ln -sfn elsewhere link
echo flagged > flagged && chattr +a flagged
python3 -c 'import os; os.setxattr("xattr", "user.k", b"v2"); os.setxattr("gone-xattr-dir", "user.k", b"new")'
mkdir scratch && echo x > scratch/x && rm -r scratch
rmdir again && mkdir again && chmod 700 again
`

func undoFixture(t *testing.T, dir string) {
	writeFiles(t, dir, map[string]string{
		"replaced": "old\n", "removed": "removed\n", "gone/a/b": "b\n", "gone/c": "c\n",
		"moved": "moved\n", "mode": "mode\n", "owner": "owner\n", "linked": "linked\n",
		"xattr": "x\n", "gone-xattr-dir/": "", "again/": "",
	})
	require.NoError(t, os.Link(filepath.Join(dir, "linked"), filepath.Join(dir, "linked2")))
	require.NoError(t, os.Symlink("target", filepath.Join(dir, "link")))
	require.NoError(t, unix.Setxattr(filepath.Join(dir, "xattr"), "user.k", []byte("v1"), 0))
	require.NoError(t, unix.Setxattr(filepath.Join(dir, "gone"), "user.dir", []byte("kept"), 0))
	require.NoError(t, os.Chmod(filepath.Join(dir, "gone/a"), 0o750))
}

// TestUndoPutsBackThenRedoes: undo puts back contents, names, modes,
// owners, times, extended attributes and inode flags of everything a
// transaction changed, as a new transaction, and leaves a later
// unrelated change alone; the undo of that undo redoes the transaction.
func TestUndoPutsBackThenRedoes(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root; the script chowns")
	requireTools(t, "chattr", "python3")
	dir := t.TempDir()
	t.Cleanup(func() { clearTestFlags(dir) })
	state := t.TempDir()
	undoFixture(t, dir)
	if err := unix.Setxattr(filepath.Join(dir, "xattr"), "user.probe", nil, 0); err != nil {
		testenv.SkipOrFail(t, "no user extended attributes on the test directory's file system")
	}
	require.NoError(t, unix.Removexattr(filepath.Join(dir, "xattr"), "user.probe"))
	before := undoManifest(t, dir)

	r := rwRun(t, []string{"TXEXEC_STATE_DIR=" + state}, txexecBin, "--", "sh", "-c", "cd "+dir+" && "+undoScript)
	require.Equal(t, 0, r.code, r.stderr)
	id := lastTx(t, state)
	after := undoManifest(t, dir)
	require.NotEqual(t, before, after)
	log := rwTx(t, state, nil, "log")
	assert.Regexp(t, fmt.Sprintf(`(?m)^%d .*\[undoable, `, id), log.stdout)
	gc := rwTx(t, state, nil, "gc")
	require.Equal(t, 0, gc.code, gc.stderr)
	assert.Contains(t, gc.stdout, "before-images: 1 transactions can be undone")
	show := rwTx(t, state, nil, "show", strconv.FormatInt(id, 10), "--diff")
	require.Equal(t, 0, show.code, show.stderr)
	assert.Contains(t, show.stdout, "--- "+filepath.Join(dir, "replaced")+"\n+++ "+filepath.Join(dir, "replaced")+"\n@@ -1 +1 @@\n-old\n+replaced\n")
	assert.Contains(t, show.stdout, "--- "+filepath.Join(dir, "removed")+"\n+++ /dev/null\n")

	// Unrelated work after it, in the same directory.
	unrelated := filepath.Join(dir, "unrelated")
	require.NoError(t, os.WriteFile(unrelated, []byte("mine\n"), 0o644))

	dry := rwTx(t, state, nil, "undo", "--dry-run", strconv.FormatInt(id, 10))
	require.Equal(t, 0, dry.code, dry.stderr)
	assert.Contains(t, dry.stdout, "put back "+filepath.Join(dir, "replaced"))
	assert.Contains(t, dry.stdout, "rmdir "+filepath.Join(dir, "made"))
	assert.Equal(t, id, lastTx(t, state), "a dry run begins no transaction")

	u := rwTx(t, state, nil, "undo", strconv.FormatInt(id, 10))
	require.Equal(t, 0, u.code, u.stderr)
	undoID := txIDIn(t, u.stderr, `transaction (\d+) undid transaction`)
	require.NoError(t, os.Remove(unrelated))
	assert.Equal(t, before, undoManifest(t, dir), "everything is as before the transaction")
	require.NoError(t, os.WriteFile(unrelated, []byte("mine\n"), 0o644))
	log = rwTx(t, state, nil, "log")
	assert.Regexp(t, fmt.Sprintf(`(?m)^%d .*\[undone by %d\]`, id, undoID), log.stdout)
	again := rwTx(t, state, nil, "undo", strconv.FormatInt(id, 10))
	assert.Equal(t, 1, again.code, "undone already: %s", again.stderr)
	assert.Contains(t, again.stderr, fmt.Sprintf("transaction %d undid it already", undoID))

	redo := rwTx(t, state, nil, "undo", strconv.FormatInt(undoID, 10))
	require.Equal(t, 0, redo.code, redo.stderr)
	require.NoError(t, os.Remove(unrelated))
	assert.Equal(t, after, undoManifest(t, dir), "the undo of the undo redoes the transaction")
}

// TestUndoRefusedWhenChangedAgain: useradd alice, then useradd bob, then
// undo of alice's: refused with exit 75 naming bob's transaction, nothing
// changed; with --force the account files are skipped too, and it says
// so. A change from outside txexec is named as such.
func TestUndoRefusedWhenChangedAgain(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTool(t, "useradd")
	root := useraddRoot(t)
	state := t.TempDir()
	before := readAccounts(t, root)
	a := rwTx(t, state, nil, "--", "useradd", "-P", root, "txexec-test-alice")
	require.Equal(t, 0, a.code, a.stderr)
	alice := lastTx(t, state)
	b := rwTx(t, state, nil, "--", "useradd", "-P", root, "txexec-test-bob")
	require.Equal(t, 0, b.code, b.stderr)
	bob := lastTx(t, state)
	both := readAccounts(t, root)
	require.Contains(t, both["passwd"], "txexec-test-alice")
	require.Contains(t, both["passwd"], "txexec-test-bob")

	r := rwTx(t, state, nil, "undo", strconv.FormatInt(alice, 10))
	assert.Equal(t, 75, r.code, r.stderr)
	assert.Contains(t, r.stderr, filepath.Join(root, "etc/passwd")+" (replaced, by transaction "+strconv.FormatInt(bob, 10)+")")
	assert.Contains(t, r.stderr, "nothing was changed")
	assert.Equal(t, both, readAccounts(t, root), "nothing changed")
	assert.Equal(t, bob, lastTx(t, state), "no transaction was made")

	f := rwTx(t, state, nil, "undo", "--force", strconv.FormatInt(alice, 10))
	assert.Equal(t, 0, f.code, f.stderr)
	assert.Contains(t, f.stderr, "skipped (--force)")
	assert.Contains(t, f.stderr, filepath.Join(root, "etc/passwd")+" (replaced, by transaction "+strconv.FormatInt(bob, 10)+")")
	assert.Equal(t, both, readAccounts(t, root), "the account files bob changed stay as they are")
	assert.NotEqual(t, before, both)

	// Changed from outside txexec.
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	c := rwTx(t, state, nil, "--", "sh", "-c", "echo one > "+file)
	require.Equal(t, 0, c.code, c.stderr)
	id := lastTx(t, state)
	require.NoError(t, os.WriteFile(file, []byte("outside\n"), 0o644))
	o := rwTx(t, state, nil, "undo", strconv.FormatInt(id, 10))
	assert.Equal(t, 75, o.code, o.stderr)
	assert.Contains(t, o.stderr, file+" (modified, by a process outside txexec)")
	b2, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "outside\n", string(b2))
}

// TestUndoKilledThenRecovered: txexec undo killed at every fault point of
// its commit, before each op of its write-through and inside ops leaves,
// after txexec recover, the tree either fully undone or not at all.
func TestUndoKilledThenRecovered(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root; the script chowns")
	requireTools(t, "chattr", "python3")
	// The undo's op count, from one run to the end.
	probe := t.TempDir()
	t.Cleanup(func() { clearTestFlags(probe) })
	undoFixture(t, probe)
	pstate := t.TempDir()
	r := rwRun(t, []string{"TXEXEC_STATE_DIR=" + pstate}, txexecBin, "--", "sh", "-c", "cd "+probe+" && "+undoScript)
	require.Equal(t, 0, r.code, r.stderr)
	u := rwTx(t, pstate, nil, "undo", strconv.FormatInt(lastTx(t, pstate), 10))
	require.Equal(t, 0, u.code, u.stderr)
	show := rwTx(t, pstate, nil, "log", "--json")
	opN := txIDIn(t, show.stdout, `"ops": (\d+)`)
	require.GreaterOrEqual(t, opN, int64(10))

	faults := []string{"store.before-commit", "store.after-commit", "txn.after-commit-point",
		"txn.apply.mid-op", "txn.before-mark-applied"}
	for k := int64(1); k <= opN; k++ {
		faults = append(faults, fmt.Sprintf("txn.apply.before-op@%d", k))
	}
	for _, fault := range faults {
		t.Run(fault, func(t *testing.T) { undoKilled(t, t.TempDir(), fault) })
	}
	// On a mount other than the state directory's, the undo makes a
	// staging area and an undo area at its root.
	for _, fault := range []string{"store.area-registered", "store.undo-area-registered", "store.before-commit",
		"txn.apply.before-op@1", fmt.Sprintf("txn.apply.before-op@%d", opN/2), "txn.before-mark-applied"} {
		t.Run("other mount/"+fault, func(t *testing.T) { undoKilled(t, otherMountDir(t), fault) })
	}
}

// otherMountDir is a new directory at the root of a bind mount: a mount
// other than the state directory's, of a file system with inode flags
// and extended attributes, where a hard link from the state directory's
// mount fails with EXDEV.
func otherMountDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mountOn(t, dir, bindMount)
	return dir
}

// undoKilled runs undoScript in dir, then its undo killed at fault, then
// txexec recover, and checks that the tree is as before the script or as
// after it.
func undoKilled(t *testing.T, dir, fault string) {
	{
		{
			t.Cleanup(func() { clearTestFlags(dir) })
			undoFixture(t, dir)
			state := t.TempDir()
			before := undoManifest(t, dir)
			r := rwRun(t, []string{"TXEXEC_STATE_DIR=" + state}, txexecBin, "--", "sh", "-c", "cd "+dir+" && "+undoScript)
			require.Equal(t, 0, r.code, r.stderr)
			id := lastTx(t, state)
			after := undoManifest(t, dir)
			k := rwTx(t, state, []string{"TXEXEC_FAULT=" + fault}, "undo", strconv.FormatInt(id, 10))
			rec := rwTx(t, state, nil, "recover")
			require.Equal(t, 0, rec.code, rec.stderr)
			got := undoManifest(t, dir)
			require.Equal(t, 128+int(syscall.SIGKILL), k.code, "killed at %s: %s", fault, k.stderr)
			beforeCommitPoint := fault == "store.before-commit" || fault == "store.area-registered"
			switch {
			case assert.ObjectsAreEqual(before, got):
				assert.False(t, beforeCommitPoint, "killed before its commit point, the undo left nothing")
			case assert.ObjectsAreEqual(after, got):
				assert.True(t, beforeCommitPoint, "killed after its commit point, the undo is finished by recover")
			default:
				t.Fatalf("neither undone nor as it was:\n%s", strings.Join(got, "\n"))
			}
			// Not undone: it can be now.
			if assert.ObjectsAreEqual(after, got) {
				u := rwTx(t, state, nil, "undo", strconv.FormatInt(id, 10))
				require.Equal(t, 0, u.code, u.stderr)
				assert.Equal(t, before, undoManifest(t, dir))
			}
		}
	}
}
