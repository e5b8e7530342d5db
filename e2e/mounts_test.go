package e2e

// Transactions that change files on other mounts than the state
// directory's: a tmpfs, a bind mount of a directory of the same file
// system, a reflink-capable XFS on a loop device. Staged objects live on
// the mount of the paths they shadow (docs/architecture.md §4), in an area at the
// mount's root that exists only while a transaction needs it.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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

// areaPrefix begins the names of staging areas at mount roots
// (store.AreaPrefix).
const areaPrefix = ".txexec-staging-"

// otherMount is a kind of mount a test tree can be on.
type otherMount string

const (
	tmpfsMount otherMount = "tmpfs"
	bindMount  otherMount = "bind" // a directory of the state directory's file system
)

// mountOn makes dir, an empty directory, the root of a new mount of kind
// m, unmounted when the test ends. It skips the test (fails it in CI)
// where mounting is not allowed.
func mountOn(t *testing.T, dir string, m otherMount) {
	t.Helper()
	testenv.NeedRoot(t, "txexec supervises as root")
	var err error
	switch m {
	case tmpfsMount:
		err = unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755")
	case bindMount:
		err = unix.Mount(t.TempDir(), dir, "", unix.MS_BIND, "")
	default:
		// "bind:SRC": a bind mount of the directory SRC.
		src, ok := strings.CutPrefix(string(m), "bind:")
		require.True(t, ok, "unknown mount kind %q", m)
		err = unix.Mount(src, dir, "", unix.MS_BIND, "")
	}
	if err == unix.EPERM {
		testenv.SkipOrFail(t, "cannot mount a %s: %v", m, err)
	}
	require.NoError(t, err, "mount a %s on %s", m, dir)
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(dir, unix.MNT_DETACH), "unmount %s", dir) })
}

// areasIn lists the staging areas at the root of mount dir.
func areasIn(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var areas []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), areaPrefix) {
			areas = append(areas, e.Name())
		}
	}
	return areas
}

// mountsFixture makes base/local (on the state directory's file system)
// and base/mnt (the root of a mount of kind m) with the same small tree.
func mountsFixture(t *testing.T, m otherMount) (base string) {
	t.Helper()
	base = t.TempDir()
	mnt := filepath.Join(base, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	mountOn(t, mnt, m)
	for _, root := range []string{"local", "mnt"} {
		writeFiles(t, filepath.Join(base, root), map[string]string{
			"a.txt": "alpha\n", "b.txt": "bravo\n", "c.txt": "charlie\n", "d/e.txt": "echo\n", "gone/x": "x\n",
		})
	}
	return base
}

// mountsScript changes both trees in every way write-through knows, lists
// them (a listing inside the transaction never shows a staging area), and
// moves a file from one mount to the other (rename fails with EXDEV as on
// Linux, and mv copies).
const mountsScript = `set -e
for r in local mnt; do
  echo new > $r/new.txt
  echo more >> $r/a.txt
  mv $r/b.txt $r/b-renamed.txt
  rm $r/c.txt
  mkdir -p $r/made/deep
  echo deep > $r/made/deep/f.txt
  chmod 0700 $r/d
  ln $r/a.txt $r/a-link
  ln -s a.txt $r/sym
  rm -r $r/gone
  ls -a $r > $r/listing
  ls -ld $r | cut -d' ' -f1-2 > $r/mode-and-links
done
mv local/new.txt mnt/moved.txt`

// mountsTrees describes both trees of a mountsFixture.
func mountsTrees(t *testing.T, base string) []string {
	t.Helper()
	var out []string
	for _, root := range []string{"local", "mnt"} {
		for _, l := range treeState(t, filepath.Join(base, root)) {
			out = append(out, root+"/"+l)
		}
	}
	return out
}

// TestOtherMounts: a transaction changes a tree on the state directory's
// file system and one on another mount. Committed, the host shows what
// the same script does natively; aborted, both are untouched; either way
// no staging area is left, and while a kept transaction waits its area is
// a private directory at the mount's root.
func TestOtherMounts(t *testing.T) {
	for _, m := range []otherMount{tmpfsMount, bindMount} {
		t.Run(string(m), func(t *testing.T) {
			native := mountsFixture(t, m)
			pre := mountsTrees(t, native)
			nativeRun(t, native, mountsScript)
			post := mountsTrees(t, native)

			for _, tc := range []struct {
				name   string
				script string
				status int
				want   []string
			}{
				{"commit", mountsScript, 0, post},
				{"abort", mountsScript + "; exit 3", 3, pre},
			} {
				t.Run(tc.name, func(t *testing.T) {
					s := newTxState(t)
					base := mountsFixture(t, m)
					r := s.tx(t, base, tc.script)
					require.Equal(t, tc.status, r.status, r.stderr)
					assert.Equal(t, tc.want, mountsTrees(t, base))
					assert.Empty(t, areasIn(t, filepath.Join(base, "mnt")), "staging areas after %s", tc.name)
					assert.Empty(t, s.stagingLeft(t))
				})
			}
			t.Run("keep", func(t *testing.T) {
				s := newTxState(t)
				base := mountsFixture(t, m)
				r := s.tx(t, base, mountsScript, "--on-exit=keep")
				require.Equal(t, 0, r.status, r.stderr)
				id := txID(t, r.stderr)
				mnt := filepath.Join(base, "mnt")
				areas := areasIn(t, mnt)
				require.Len(t, areas, 1, "one staging area at the mount's root")
				fi, err := os.Stat(filepath.Join(mnt, areas[0]))
				require.NoError(t, err)
				private := os.FileMode(0o700)
				if os.Geteuid() == 0 {
					// Searchable by the transaction's processes of other
					// users, never listable (docs/semantics.md §1).
					private = 0o711
				}
				assert.Equal(t, os.ModeDir|private, fi.Mode(), "a private directory")
				assert.True(t, strings.HasSuffix(areas[0], fmt.Sprintf("-%d", id)), "named for the transaction: %s", areas[0])
				show := s.run(t, "/", nil, "show", fmt.Sprint(id))
				require.Equal(t, 0, show.status, show.stderr)
				assert.Contains(t, show.stdout, "create "+filepath.Join(mnt, "new.txt"), "show knows staged objects in every area")

				r = s.run(t, "/", nil, "abort", fmt.Sprint(id))
				require.Equal(t, 0, r.status, r.stderr)
				assert.Equal(t, pre, mountsTrees(t, base))
				assert.Empty(t, areasIn(t, mnt), "txexec abort removes the area")
			})
		})
	}
}

// TestCrashOtherMount: crashScript on a tmpfs (not the state directory's
// mount), txexec killed at the fault points of the commit path and of an
// area's creation; recovery leaves the tree all or nothing and no staging
// area behind.
func TestCrashOtherMount(t *testing.T) {
	ref := crashReference(t)
	tests := []struct {
		fault string
		post  bool
	}{
		{"store.area-registered", false}, // recorded, not yet made
		{"store.before-commit", false},
		{"store.after-commit", true},
		{"txn.apply.before-op@2", true},
		{"txn.apply.mid-op", true},
		{"txn.before-mark-applied", true},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			s := newTxState(t)
			work := filepath.Join(t.TempDir(), "work")
			require.NoError(t, os.Mkdir(work, 0o755))
			mountOn(t, work, tmpfsMount)
			crashFixture(t, work)
			r := s.run(t, work, []string{"TXEXEC_FAULT=" + tt.fault}, "--", "sh", "-c", crashScript)
			require.True(t, r.killed, "the fault point must be reached and kill txexec; status %d, stderr:\n%s", r.status, r.stderr)
			recoverAndCheck(t, s)
			assert.Empty(t, areasIn(t, work), "staging areas after recovery")
			want, state := ref.pre, "aborted"
			if tt.post {
				want, state = ref.post, "applied"
			}
			assert.Equal(t, want, relabel(treeState(t, work)))
			assert.Equal(t, state, s.entry(t, 1).State)
		})
	}
}

// TestUnprivilegedOtherMountRefused: an unprivileged txexec cannot make a
// staging area at the root of a mount it may not write, even where it may
// write the directory it changes: the change fails, the transaction aborts
// with one line naming the path and why, and nothing reaches the host.
func TestUnprivilegedOtherMountRefused(t *testing.T) {
	requireTools(t, "setpriv")
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	mountOn(t, mnt, tmpfsMount)
	pub := filepath.Join(mnt, "pub")
	require.NoError(t, os.Mkdir(pub, 0o777))
	require.NoError(t, os.Chmod(pub, 0o777))
	openToOthers(t, mnt)
	state := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.Mkdir(state, 0o755))
	require.NoError(t, os.Chown(state, 1000, 1000))
	openToOthers(t, state)
	s := txState{dir: state}
	// The binary's own directory is private to root.
	bin := filepath.Join(t.TempDir(), "txexec")
	copyTree(t, txexecBin, bin)
	openToOthers(t, filepath.Dir(bin))

	argv := append(append([]string{}, unprivileged...), bin, "--", "sh", "-c", "echo hi > f")
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir, c.Env = pub, s.env()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	r := finished(t, c, c.Run(), &out, &errb)

	assert.NotEqual(t, 0, r.status)
	assert.Regexp(t, `(?m)^txexec: transaction 1 aborted: cannot stage the change to `+regexp.QuoteMeta(pub+"/f: ")+
		`.*`+regexp.QuoteMeta(mnt+"/"+areaPrefix)+`.*: permission denied \(.*run txexec as a user who may create it there`, r.stderr)
	assert.NoFileExists(t, filepath.Join(pub, "f"))
	assert.Empty(t, areasIn(t, mnt))
}

// TestReflinkCopyUp: copying up a 1 GiB file on a reflink-capable file
// system (XFS, on a loop device) shares its extents: while the transaction
// is kept, its staged copy is in the staging area on that file system and
// the free space is what it was, give or take the block the append wrote
// (issue 3: "copy-up of a 1 GiB file on a reflink-capable file system is
// O(1)"). Space, not time, is what is measured.
func TestReflinkCopyUp(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "mkfs.xfs", "mount", "umount")
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "xfs.img"), filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, 4<<30)) // sparse
	b, err := exec.Command("mkfs.xfs", "-q", "-m", "reflink=1", img).CombinedOutput()
	require.NoError(t, err, "mkfs.xfs: %s", b)
	// allocsize pins XFS's speculative preallocation past EOF, which
	// would otherwise reserve space in proportion to the file's size.
	if b, err := exec.Command("mount", "-o", "loop,allocsize=64k", img, mnt).CombinedOutput(); err != nil {
		if _, serr := os.Stat("/dev/loop-control"); serr != nil {
			testenv.SkipOrFail(t, "no loop devices (%v): mount -o loop: %v: %s", serr, err, b)
		}
		require.NoError(t, err, "mount -o loop: %s", b)
	}
	t.Cleanup(func() {
		// mount -o loop set up the loop device to go with the mount.
		b, err := exec.Command("umount", mnt).CombinedOutput()
		assert.NoError(t, err, "umount %s: %s", mnt, b)
	})

	const size = 1 << 30
	big := filepath.Join(mnt, "big")
	f, err := os.Create(big)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	chunk := make([]byte, 1<<20)
	for range size / len(chunk) {
		for i := 0; i < len(chunk); i += 8 {
			v := rng.Uint64()
			for k := range 8 {
				chunk[i+k] = byte(v >> (8 * k))
			}
		}
		_, err := f.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	last := chunk[len(chunk)-1]

	free := func() int64 {
		var sfs unix.Statfs_t
		require.NoError(t, unix.Statfs(mnt, &sfs))
		return int64(sfs.Bfree) * sfs.Bsize
	}
	before := free()
	s := newTxState(t)
	r := s.tx(t, mnt, "printf x >> big", "--on-exit=keep")
	require.Equal(t, 0, r.status, r.stderr)
	id := txID(t, r.stderr)

	areas := areasIn(t, mnt)
	require.Len(t, areas, 1, "the copy is staged on the file system of the original")
	staged, err := filepath.Glob(filepath.Join(mnt, areas[0], "*"))
	require.NoError(t, err)
	var copies []string
	for _, p := range staged {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == size+1 {
			copies = append(copies, p)
		}
	}
	require.Len(t, copies, 1, "one staged copy of big, appended to, in %v", staged)
	used := before - free()
	t.Logf("copy-up of %d bytes used %d bytes of the file system", size, used)
	assert.Less(t, used, int64(64<<20), "the copy shares the original's extents: it must not use ~1 GiB")

	r = s.run(t, "/", nil, "commit", fmt.Sprint(id))
	require.Equal(t, 0, r.status, r.stderr)
	fi, err := os.Stat(big)
	require.NoError(t, err)
	assert.Equal(t, int64(size+1), fi.Size())
	tail := make([]byte, 2)
	f, err = os.Open(big)
	require.NoError(t, err)
	_, err = f.ReadAt(tail, size-1)
	f.Close()
	require.NoError(t, err)
	assert.Equal(t, []byte{last, 'x'}, tail)
	assert.Empty(t, areasIn(t, mnt), "staging areas after commit")
	assert.Less(t, before-free(), int64(64<<20), "after commit too")
}

// TestReadOnlyMountErrnos: on a read-only mount every call that would
// change it fails with the errno Linux gives, in Linux's order: EROFS
// before a missing name's ENOENT for unlink and rmdir (the mount is
// checked before the lookup), EEXIST before EROFS for mkdir of an existing
// name, EROFS for changes to existing objects.
func TestReadOnlyMountErrnos(t *testing.T) {
	requireTools(t, "python3")
	const script = `
import os
def try_(name, f):
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, e.strerror)
try_("unlink missing", lambda: os.unlink("ro/missing"))
try_("rmdir missing", lambda: os.rmdir("ro/missing"))
try_("unlink file", lambda: os.unlink("ro/f"))
try_("rmdir dir", lambda: os.rmdir("ro/d"))
try_("mkdir existing", lambda: os.mkdir("ro/d"))
try_("mkdir new", lambda: os.mkdir("ro/new"))
try_("create", lambda: os.close(os.open("ro/g", os.O_CREAT | os.O_WRONLY, 0o644)))
try_("open write", lambda: os.close(os.open("ro/f", os.O_WRONLY)))
try_("chmod", lambda: os.chmod("ro/f", 0o600))
try_("rename", lambda: os.rename("ro/f", "ro/h"))
try_("symlink", lambda: os.symlink("f", "ro/l"))
try_("read", lambda: open("ro/f").read())
`
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"f": "data\n", "d/x": "x\n"})
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	require.NoError(t, os.Mkdir(ro, 0o755))
	mountOn(t, ro, otherMount("bind:"+src))
	require.NoError(t, unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""))
	want := run(t, native, command{Argv: []string{"python3", "-c", script}, Dir: dir})
	require.Equal(t, 0, want.Status, want.Stderr)
	require.Contains(t, want.Stdout, "unlink missing Read-only file system")
	for _, m := range underTxexec {
		got := run(t, m, command{Argv: []string{"python3", "-c", script}, Dir: dir})
		assert.Equal(t, want.Stdout, got.Stdout, m.String())
	}
}
