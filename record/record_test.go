package record

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/store"
)

// readOf is the read record a run would have left for path, as found now.
func readOf(t *testing.T, path string, data, listing bool) store.ReadRecord {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return store.ReadRecord{Path: path}
	}
	return store.ReadRecord{Path: path, Exists: true, Dev: st.Dev, Ino: st.Ino, Type: st.Mode & unix.S_IFMT,
		Data: data, Meta: true, Mode: st.Mode, Size: st.Size, Mtime: store.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec},
		Listing: listing}
}

// TestCaptureMaterialize: what Capture records of a tree, Materialize
// makes again in an empty root: contents read, sizes of files only looked
// at, symlinks, stand-ins for listed entries, modes and mtimes; nothing
// leaves the root through a recorded symlink.
func TestCaptureMaterialize(t *testing.T) {
	host := t.TempDir()
	mk := func(name, content string, mode os.FileMode) {
		p := filepath.Join(host, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
	}
	mk("d/read.txt", "contents", 0o640)
	mk("d/looked.bin", "0123456789", 0o600)
	mk("d/listed-only", "never read", 0o644)
	require.NoError(t, os.Symlink("read.txt", filepath.Join(host, "d/link")))
	require.NoError(t, os.Symlink("/", filepath.Join(host, "d/escape"))) // absolute: must stay in the root
	mtime := unix.NsecToTimespec(946684800_000000000)
	require.NoError(t, unix.UtimesNano(filepath.Join(host, "d/read.txt"), []unix.Timespec{mtime, mtime}))

	blobs := Dir(t.TempDir())
	reads := []store.ReadRecord{
		readOf(t, filepath.Join(host, "d"), false, true),
		readOf(t, filepath.Join(host, "d/read.txt"), true, false),
		readOf(t, filepath.Join(host, "d/looked.bin"), false, false),
		readOf(t, filepath.Join(host, "d/link"), false, false),
		readOf(t, filepath.Join(host, "d/escape"), false, false),
		readOf(t, filepath.Join(host, "d/escape/etc/never-made"), false, false),
		readOf(t, filepath.Join(host, "d/absent"), false, false),
	}
	// A file reached through the absolute symlink: made again below the
	// root, never at its host path (removed after the capture).
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(outside, []byte("out"), 0o644))
	reads = append(reads, readOf(t, filepath.Join(host, "d/escape", outside), true, false))
	files, err := Capture(reads, blobs)
	require.NoError(t, err)
	require.NoError(t, os.Remove(outside))
	m := &Manifest{Cwd: filepath.Join(host, "d"), Files: files}

	root := t.TempDir()
	require.NoError(t, Materialize(root, m, blobs))
	in := func(p string) string { return filepath.Join(root, host, p) }
	b, err := os.ReadFile(in("d/read.txt"))
	require.NoError(t, err)
	assert.Equal(t, "contents", string(b))
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(in("d/read.txt"), &st))
	assert.Equal(t, uint32(0o640), st.Mode&0o7777)
	assert.Equal(t, mtime, st.Mtim)
	b, err = os.ReadFile(in("d/looked.bin"))
	require.NoError(t, err)
	assert.Equal(t, make([]byte, 10), b, "a file only looked at has its size, not its data")
	target, err := os.Readlink(in("d/link"))
	require.NoError(t, err)
	assert.Equal(t, "read.txt", target)
	b, err = os.ReadFile(in("d/listed-only"))
	require.NoError(t, err)
	assert.Len(t, b, len("never read"), "a stand-in for a listed entry")
	assert.NoFileExists(t, in("d/absent"))
	assert.NoFileExists(t, "/etc/never-made")
	assert.NoFileExists(t, outside, "nothing is made through an absolute symlink outside the root")
	b, err = os.ReadFile(filepath.Join(root, outside))
	require.NoError(t, err)
	assert.Equal(t, "out", string(b))
	for _, d := range BoundTrees() {
		assert.DirExists(t, filepath.Join(root, d))
	}
}

// TestCaptureRefusesChangedFiles: a file that is no longer what the run
// read is not recorded as if it were.
func TestCaptureRefusesChangedFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("one"), 0o644))
	r := readOf(t, p, true, false)
	require.NoError(t, os.WriteFile(p, []byte("three"), 0o644))
	_, err := Capture([]store.ReadRecord{r}, Dir(t.TempDir()))
	var ce *ChangedError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, p, ce.Path)
}

// TestExportImport: an exported recording imports into another directory
// with its manifest and every blob it names; a damaged or foreign file is
// refused.
func TestExportImport(t *testing.T) {
	src := Dir(t.TempDir())
	out, err := src.Put(bytes.NewReader([]byte("stdout")))
	require.NoError(t, err)
	data, err := src.Put(bytes.NewReader([]byte("file contents")))
	require.NoError(t, err)
	m := &Manifest{Argv: []string{"sh", "-c", "true"}, Cwd: "/w", Seed: 3,
		Files:   []File{{Path: "/w/f", Type: TypeFile, Blob: data}},
		Outcome: Outcome{Status: 1, Stdout: out, Stderr: out, Changes: []string{"create /w/x"}}}
	var buf bytes.Buffer
	require.NoError(t, Export(&buf, m, src))

	got, blobs, err := Import(bytes.NewReader(buf.Bytes()), t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, m, got)
	b, err := ReadBlob(blobs, data)
	require.NoError(t, err)
	assert.Equal(t, "file contents", string(b))

	_, _, err = Import(bytes.NewReader([]byte("plain text")), t.TempDir())
	assert.ErrorIs(t, err, ErrNotRecording)
	damaged := bytes.Replace(buf.Bytes(), []byte("file contents"), []byte("file CONTENTS"), 1)
	_, _, err = Import(bytes.NewReader(damaged), t.TempDir())
	assert.ErrorContains(t, err, "does not hold what its name says")
}

// TestMatches: the host matches what Capture recorded until a recorded
// file's contents, a path found absent or a listing changes.
func TestMatches(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(f, []byte("one"), 0o644))
	other := t.TempDir() // not listed: an absent path there is told by itself
	reads := []store.ReadRecord{readOf(t, dir, false, true), readOf(t, f, true, false), readOf(t, filepath.Join(other, "absent"), false, false)}
	files, err := Capture(reads, Dir(t.TempDir()))
	require.NoError(t, err)
	m := &Manifest{Files: files}
	require.NoError(t, Matches(m))

	for _, tc := range []struct {
		name, path string
		change     func()
		undo       func()
	}{
		{"contents", f, func() { os.WriteFile(f, []byte("two"), 0o644) }, func() { os.WriteFile(f, []byte("one"), 0o644) }},
		{"mode", f, func() { os.Chmod(f, 0o600) }, func() { os.Chmod(f, 0o644) }},
		{"absent", filepath.Join(other, "absent"), func() { os.WriteFile(filepath.Join(other, "absent"), nil, 0o644) }, func() { os.Remove(filepath.Join(other, "absent")) }},
		{"listing", dir, func() { os.WriteFile(filepath.Join(dir, "new"), nil, 0o644) }, func() { os.Remove(filepath.Join(dir, "new")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change()
			defer tc.undo()
			var me *MismatchError
			require.ErrorAs(t, Matches(m), &me)
			assert.Equal(t, tc.path, me.Path)
		})
	}
	require.NoError(t, Matches(m))
}
