package wrap

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// fakeScene is a root-owned directory (mode 0755) with a fake txexec and a
// fake launcher template: Wrap copies bytes and never runs them.
type fakeScene struct {
	dir string
	w   *Wrapper
}

func newFakeScene(t *testing.T) fakeScene {
	testenv.NeedRoot(t, "wrap makes root-owned set-ID files")
	dir := t.TempDir()
	// Searchable by all, as a wrapped directory must be (t.TempDir makes
	// it and its parent 0700).
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	if err := SecurePath(dir, Directory); err != nil {
		t.Skipf("the temporary directory is not one the launcher trusts: %v", err)
	}
	txexec := filepath.Join(dir, "txexec")
	require.NoError(t, os.WriteFile(txexec, []byte("a txexec"), 0o755))
	template := append(append([]byte("launcher code "), confMark...), make([]byte, confBlockSize)...)
	return fakeScene{dir: dir, w: &Wrapper{Dir: filepath.Join(dir, "wrapped"), Txexec: txexec, Template: template,
		Options: []string{"--on-exit=abort"}}}
}

// program makes a root-owned program of mode and group.
func (s fakeScene) program(t *testing.T, name string, mode uint32, gid int) string {
	p := filepath.Join(s.dir, name)
	require.NoError(t, os.WriteFile(p, []byte("\x7fELF, the program "+name), 0o700))
	require.NoError(t, os.Chown(p, 0, gid))
	require.NoError(t, unix.Chmod(p, mode))
	return p
}

func TestWrapUnwrap(t *testing.T) {
	s := newFakeScene(t)
	p := s.program(t, "prog", 0o2750, 42)
	old := []unix.Timespec{{Sec: 1000000000}, {Sec: 1000000001}}
	require.NoError(t, unix.UtimesNano(p, old))

	c, err := s.w.Wrap(p)
	require.NoError(t, err)
	assert.Equal(t, &Config{Path: p, Original: filepath.Join(s.w.Dir, ID(p), "prog"), Txexec: s.w.Txexec,
		Mode: 0o2750, UID: 0, GID: 42, Options: []string{"--on-exit=abort"}}, c)
	launched, err := Launched(p)
	require.NoError(t, err)
	assert.Equal(t, c, launched)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(p, &st))
	assert.Equal(t, uint32(0o4750), st.Mode&0o7777, "the launcher: set-user-ID, not set-group-ID")
	assert.Equal(t, [2]uint32{0, 42}, [2]uint32{st.Uid, st.Gid})
	require.NoError(t, unix.Stat(c.Original, &st))
	assert.Equal(t, uint32(0o750), st.Mode&0o7777, "the original: no set-ID bit")
	assert.Equal(t, [2]uint32{0, 42}, [2]uint32{st.Uid, st.Gid})
	assert.Equal(t, old[1], st.Mtim)
	require.NoError(t, SecurePath(c.ConfPath(), RegularFile))
	require.NoError(t, SecurePath(c.Original, RegularFile))
	assert.Equal(t, InPlace, StateOf(c))

	_, err = s.w.Wrap(p)
	assert.ErrorIs(t, err, ErrAlreadyWrapped)

	cs, bad, err := List(s.w.Dir)
	require.NoError(t, err)
	assert.Empty(t, bad)
	assert.Equal(t, []*Config{c}, cs)

	_, err = Unwrap(p)
	require.NoError(t, err)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "\x7fELF, the program prog", string(b))
	require.NoError(t, unix.Stat(p, &st))
	assert.Equal(t, uint32(0o2750), st.Mode&0o7777)
	assert.Equal(t, [2]uint32{0, 42}, [2]uint32{st.Uid, st.Gid})
	assert.Equal(t, old[1], st.Mtim)
	assert.NoDirExists(t, filepath.Dir(c.Original))
	_, err = Unwrap(p)
	assert.Error(t, err, "no longer wrapped")
}

func TestWrapRefuses(t *testing.T) {
	s := newFakeScene(t)
	plain := s.program(t, "plain", 0o755, 0)
	groupWritable := s.program(t, "group-writable", 0o4775, 0)
	linked := s.program(t, "linked", 0o4755, 0)
	require.NoError(t, os.Link(linked, filepath.Join(s.dir, "linked2")))
	script := s.program(t, "script", 0o4755, 0)
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho hello\n"), 0o4755))
	symlink := filepath.Join(s.dir, "symlink")
	require.NoError(t, os.Symlink(linked, symlink))
	launcher := s.program(t, "launcher", 0o4755, 0)
	require.NoError(t, os.WriteFile(launcher, s.w.Template, 0o4755))

	for _, tc := range []struct{ name, path, want string }{
		{"not set-ID", plain, "neither set-user-ID nor set-group-ID, and no file capabilities: nothing to protect"},
		{"writable by its group", groupWritable, "writable by others than its owner: fix its mode first"},
		{"hard links", linked, "has 2 hard links: the other names would stay unprotected"},
		{"symlink", symlink, "a symlink: wrap the file it leads to"},
		{"a script", script, "not an ELF program: Linux ignores its set-ID bits, so there is nothing to protect"},
		{"a launcher", launcher, ErrAlreadyWrapped.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := os.ReadFile(tc.path)
			require.NoError(t, err)
			_, err = s.w.Wrap(tc.path)
			require.EqualError(t, err, tc.want)
			after, err := os.ReadFile(tc.path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(before, after))
		})
	}
	t.Run("an untrusted txexec", func(t *testing.T) {
		p := s.program(t, "prog", 0o4755, 0)
		require.NoError(t, os.Chmod(s.w.Txexec, 0o775))
		defer os.Chmod(s.w.Txexec, 0o755)
		_, err := s.w.Wrap(p)
		require.ErrorContains(t, err, "txexec binary "+s.w.Txexec+": writable by others than root")
		ents, err := os.ReadDir(s.w.Dir)
		require.NoError(t, err)
		assert.Empty(t, ents, "nothing left behind")
	})
}

// capV2 is a version-2 security.capability: effective, cap_net_raw
// permitted.
func capV2() []byte {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 0x02000001)
	binary.LittleEndian.PutUint32(b[4:], 1<<unix.CAP_NET_RAW)
	return b
}

func TestWrapKeepsFileCapabilities(t *testing.T) {
	s := newFakeScene(t)
	p := s.program(t, "capable", 0o750, 42)
	require.NoError(t, unix.Setxattr(p, capabilityXattr, capV2(), 0))
	c, err := s.w.Wrap(p)
	require.NoError(t, err)
	assert.True(t, c.Capabilities)
	read, err := ReadConfig(c.ConfPath())
	require.NoError(t, err)
	assert.Equal(t, c, read)

	var st unix.Stat_t
	require.NoError(t, unix.Stat(filepath.Dir(c.Original), &st))
	assert.Equal(t, uint32(0o700), st.Mode&0o7777, "the entry: searchable by root alone")
	kept, err := capabilities(c.Original)
	require.NoError(t, err)
	assert.Equal(t, capV2(), kept, "the copy keeps them")
	require.NoError(t, unix.Stat(c.Original, &st))
	assert.Equal(t, uint32(0o750), st.Mode&0o7777)
	onLauncher, err := capabilities(p)
	require.NoError(t, err)
	assert.Nil(t, onLauncher, "the launcher has none")
	require.NoError(t, unix.Stat(p, &st))
	assert.Equal(t, uint32(0o4750), st.Mode&0o7777)
	require.NoError(t, SecurePath(c.Original, RegularFile))
	assert.Equal(t, InPlace, StateOf(c))

	_, err = Unwrap(p)
	require.NoError(t, err)
	restored, err := capabilities(p)
	require.NoError(t, err)
	assert.Equal(t, capV2(), restored)
	require.NoError(t, unix.Stat(p, &st))
	assert.Equal(t, uint32(0o750), st.Mode&0o7777)
	assert.Equal(t, [2]uint32{0, 42}, [2]uint32{st.Uid, st.Gid})
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "\x7fELF, the program capable", string(b))
}

func TestStateOfAFileCapabilityProgram(t *testing.T) {
	s := newFakeScene(t)
	p := s.program(t, "capable", 0o755, 0)
	require.NoError(t, unix.Setxattr(p, capabilityXattr, capV2(), 0))
	c, err := s.w.Wrap(p)
	require.NoError(t, err)
	// An upgrade: a new program with capabilities renamed over the launcher.
	upgrade := s.program(t, "upgrade", 0o755, 0)
	require.NoError(t, unix.Setxattr(upgrade, capabilityXattr, capV2(), 0))
	require.NoError(t, os.Rename(upgrade, p))
	assert.Equal(t, Replaced, StateOf(c))
	require.NoError(t, unix.Removexattr(p, capabilityXattr))
	assert.Equal(t, NoLongerSetID, StateOf(c), "neither set-ID nor capabilities")
}

func TestRefresh(t *testing.T) {
	s := newFakeScene(t)
	p := s.program(t, "prog", 0o4750, 42)
	c, err := s.w.Wrap(p)
	require.NoError(t, err)
	image, err := Configure(s.w.Template, c.ConfPath())
	require.NoError(t, err)
	updated, err := Refresh(c, image)
	require.NoError(t, err)
	assert.False(t, updated, "the same launcher")

	newer, err := Configure(append(bytes.Clone(s.w.Template), " a newer launcher"...), c.ConfPath())
	require.NoError(t, err)
	updated, err = Refresh(c, newer)
	require.NoError(t, err)
	assert.True(t, updated)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, newer, b)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(p, &st))
	assert.Equal(t, uint32(0o4750), st.Mode&0o7777)
	assert.Equal(t, [2]uint32{0, 42}, [2]uint32{st.Uid, st.Gid})
	assert.Equal(t, InPlace, StateOf(c))
}

func TestWrapNeedsASearchableWrappedDirectory(t *testing.T) {
	s := newFakeScene(t)
	p := s.program(t, "prog", 0o2755, 42)
	require.NoError(t, os.MkdirAll(s.w.Dir, 0o700))
	_, err := s.w.Wrap(p)
	require.ErrorContains(t, err, "is not searchable by every user (mode 0700)")
	require.NoError(t, os.Chmod(s.w.Dir, 0o711))
	_, err = s.w.Wrap(p)
	require.NoError(t, err)
}

func TestWrapThroughASymlinkedWrappedDirectory(t *testing.T) {
	s := newFakeScene(t)
	target := filepath.Join(s.dir, "target")
	require.NoError(t, os.Mkdir(target, 0o755))
	require.NoError(t, os.Symlink(target, filepath.Join(s.dir, "alias")))
	s.w.Dir = filepath.Join(s.dir, "alias")
	p := s.program(t, "prog", 0o4755, 0)
	c, err := s.w.Wrap(p)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(target, ID(p), "prog"), c.Original, "recorded without the symlink")
	require.NoError(t, SecurePath(c.ConfPath(), RegularFile))
}
