package e2e

// Full disks: a transaction that fills the disk its state directory and
// its data share, on a 2 MiB tmpfs.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// fullDisk is a 2 MiB tmpfs holding a state directory and a work
// directory, unmounted when the test ends.
type fullDisk struct {
	mnt, work string
	s         txState
}

func newFullDisk(t *testing.T) *fullDisk {
	t.Helper()
	testenv.NeedRoot(t, "txexec supervises as root, and the test mounts a tmpfs")
	mnt := t.TempDir()
	err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m,mode=0755")
	if err == unix.EPERM {
		testenv.SkipOrFail(t, "cannot mount a tmpfs: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(mnt, unix.MNT_DETACH)) })
	d := &fullDisk{mnt: mnt, work: filepath.Join(mnt, "work"), s: txState{dir: filepath.Join(mnt, "state")}}
	require.NoError(t, os.Mkdir(d.work, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d.work, "old"), []byte("old\n"), 0o644))
	r := d.s.tx(t, d.work, "true")
	require.Equal(t, 0, r.status, "an empty transaction makes the store: %s", r.stderr)
	return d
}

// free is how many bytes the tmpfs has free.
func (d *fullDisk) free(t *testing.T) int64 {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(d.mnt, &st))
	return int64(st.Bavail) * st.Bsize
}

// checkFreed checks that the staging of a transaction that filled the disk
// is gone and its space free again (all but the store's growth), and that
// txexec recover exits 0.
func (d *fullDisk) checkFreed(t *testing.T, freeBefore int64) {
	t.Helper()
	assert.Empty(t, d.s.stagingLeft(t), "no staging left")
	assert.Greater(t, d.free(t), freeBefore-256<<10, "the staged data's space is free again")
	r := d.s.run(t, "/", nil, "recover")
	assert.Equal(t, 0, r.status, "txexec recover on the disk: %s", r.stderr)
}

// TestFullDiskAbort: a transaction whose staging fills the disk fails as
// its command fails (ENOSPC, "No space left on device"), its abort and
// the command's status are recorded, its staged data is freed, recover
// exits 0, and the next transaction that writes too much fails the same
// way, with ENOSPC for copy-ups too, never EIO.
func TestFullDiskAbort(t *testing.T) {
	d := newFullDisk(t)
	freeBefore := d.free(t)

	r := d.s.tx(t, d.work, "head -c 3M /dev/zero > f")
	assert.Equal(t, 1, r.status, r.stderr)
	assert.Contains(t, r.stderr, "No space left on device")
	assert.Contains(t, r.stderr, "txexec: transaction 2 aborted: the command exited with status 1")
	assert.NotContains(t, r.stderr, "disk is full", "the abort is recorded")
	d.checkFreed(t, freeBefore)
	e := d.s.entry(t, 2)
	assert.Equal(t, "aborted", e.State)
	assert.Equal(t, "the command exited with status 1", e.Reason)
	if assert.NotNil(t, e.Status) {
		assert.Equal(t, 1, *e.Status)
	}

	// A change on another mount needs a staging area there, recorded in
	// the store on the full disk: the first gets the store's reserve;
	// once the command has filled that too, the next fails.
	first, second := t.TempDir(), t.TempDir()
	mountOn(t, second, tmpfsMount)
	r = d.s.tx(t, d.work, "head -c 3M /dev/zero > f; chmod 600 old; echo more >> old; touch "+first+"/new; "+
		"head -c 1M /dev/zero > f2; touch "+second+"/new; exit 3")
	assert.Equal(t, 3, r.status, r.stderr)
	assert.Contains(t, r.stderr, "head: error writing 'standard output': No space left on device")
	assert.Contains(t, r.stderr, "chmod: changing permissions of 'old': No space left on device")
	assert.NotContains(t, r.stderr, "touch: cannot touch '"+first+"/new'", "the reserve made room")
	assert.Contains(t, r.stderr, "touch: cannot touch '"+second+"/new': No space left on device")
	assert.NotContains(t, r.stderr, "Input/output error")
	assert.NotContains(t, r.stderr, "internal error")
	d.checkFreed(t, freeBefore)
	assert.Equal(t, "old\n", readString(t, filepath.Join(d.work, "old")))
	assert.NoFileExists(t, filepath.Join(d.work, "f"))
}

// TestFullDiskOrphan: a transaction that filled the disk and whose
// supervisor was killed is an orphan: recover frees its staged data
// before it writes anything to the store, records why, and exits 0.
func TestFullDiskOrphan(t *testing.T) {
	d := newFullDisk(t)
	freeBefore := d.free(t)
	h := d.s.startHeld(t, d.work, "head -c 3M /dev/zero > f 2>/dev/null; echo ready; read x")
	h.ready(t)
	require.Less(t, d.free(t), int64(64<<10), "the transaction filled the disk")
	require.NoError(t, h.cmd.Process.Kill())
	h.cmd.Wait()
	h.stdin.Close()

	r := d.s.run(t, "/", nil, "recover")
	assert.Equal(t, 0, r.status, "txexec recover on a full disk: %s", r.stderr)
	assert.Contains(t, r.stdout, "transaction 2: aborted; its supervisor died before the commit point")
	d.checkFreed(t, freeBefore)
	e := d.s.entry(t, 2)
	assert.Equal(t, "aborted", e.State)
	assert.Equal(t, "its supervisor died before the commit point", e.Reason)
	assert.NoFileExists(t, filepath.Join(d.work, "f"))
}

// TestFullDiskOfOthers: on a disk that something else filled, the store
// gives up its reserve (store.ReserveName) to open and record: recover
// exits 0 and a transaction runs, fails as its command fails (its write
// finds the reserve's room and then ENOSPC), and its abort is recorded;
// once there is room again the reserve is back.
func TestFullDiskOfOthers(t *testing.T) {
	d := newFullDisk(t)
	reserve := filepath.Join(d.s.dir, "reserve")
	require.FileExists(t, reserve)
	filler := filepath.Join(d.mnt, "filler")
	err := os.WriteFile(filler, make([]byte, 3<<20), 0o644)
	require.ErrorIs(t, err, unix.ENOSPC, "the disk is full")

	r := d.s.run(t, "/", nil, "recover")
	assert.Equal(t, 0, r.status, "txexec recover on a disk others filled: %s", r.stderr)
	r = d.s.tx(t, d.work, "head -c 1M /dev/zero > new; exit 3")
	assert.Equal(t, 3, r.status, r.stderr)
	assert.Contains(t, r.stderr, "No space left on device")
	assert.Contains(t, r.stderr, "txexec: transaction 2 aborted: the command exited with status 3")
	assert.Equal(t, "aborted", d.s.entry(t, 2).State)
	assert.NoFileExists(t, filepath.Join(d.work, "new"))

	require.NoError(t, os.Remove(filler))
	r = d.s.tx(t, d.work, "true")
	require.Equal(t, 0, r.status, r.stderr)
	fi, err := os.Stat(reserve)
	require.NoError(t, err, "the reserve is back")
	assert.Equal(t, int64(256<<10), fi.Size())
}
