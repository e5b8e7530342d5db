package wrap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

func TestID(t *testing.T) {
	for _, tc := range []struct{ path, id string }{
		{"/usr/bin/passwd", "usr-bin-passwd"},
		{"/usr/lib/dbus-1.0/dbus-daemon-launch-helper", "usr-lib-dbus%2D1.0-dbus%2Ddaemon%2Dlaunch%2Dhelper"},
		{"/a/.hidden", "a-%2Ehidden"},
		{"/a/..", "a-%2E."},
		{"/x%y", "x%25y"},
		{"/a b", "a%20b"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			assert.Equal(t, tc.id, ID(tc.path))
		})
	}
	// One-to-one where "-" could have been ambiguous.
	assert.NotEqual(t, ID("/a-b"), ID("/a/b"))
}

func TestConfigRoundTrip(t *testing.T) {
	c := &Config{Path: "/usr/bin/prog", Original: "/usr/lib/txexec/wrapped/usr-bin-prog/prog",
		Txexec: "/usr/local/bin/txexec", Mode: 0o4755, UID: 0, GID: 42,
		Options: []string{"--on-exit=abort", "--retry=2"}}
	got, err := ParseConfig(c.Format())
	require.NoError(t, err)
	assert.Equal(t, c, got)
	assert.True(t, got.Setuid())
	assert.False(t, got.Setgid())
	assert.Equal(t, "/usr/lib/txexec/wrapped/usr-bin-prog/wrap.conf", got.ConfPath())
}

func TestParseConfigRefuses(t *testing.T) {
	good := "path=/p\noriginal=/w/x/p\ntxexec=/t\nmode=4755\nuid=0\ngid=0\n"
	for _, tc := range []struct{ name, text string }{
		{"missing key", "path=/p\noriginal=/w/x/p\ntxexec=/t\nmode=4755\nuid=0\n"},
		{"unknown key", good + "shell=/bin/sh\n"},
		{"twice", good + "txexec=/other\n"},
		{"relative path", "path=p\noriginal=/w/x/p\ntxexec=/t\nmode=4755\nuid=0\ngid=0\n"},
		{"unclean path", "path=/p\noriginal=/w/../x/p\ntxexec=/t\nmode=4755\nuid=0\ngid=0\n"},
		{"not set-ID", "path=/p\noriginal=/w/x/p\ntxexec=/t\nmode=0755\nuid=0\ngid=0\n"},
		{"capabilities not yes", "path=/p\noriginal=/w/x/p\ntxexec=/t\nmode=0755\nuid=0\ngid=0\ncapabilities=no\n"},
		{"bad mode", "path=/p\noriginal=/w/x/p\ntxexec=/t\nmode=99\nuid=0\ngid=0\n"},
		{"no equals", good + "option\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.text))
			assert.Error(t, err)
		})
	}
	_, err := ParseConfig([]byte(good))
	assert.NoError(t, err)
	c, err := ParseConfig([]byte("path=/p\noriginal=/w/x/p\ntxexec=/t\nmode=0755\nuid=0\ngid=0\ncapabilities=yes\n"))
	require.NoError(t, err, "not set-ID, but with file capabilities")
	assert.True(t, c.Capabilities)
	assert.Contains(t, string(c.Format()), "\ncapabilities=yes\n")
}

func TestConfigure(t *testing.T) {
	template := append(append([]byte("ELF...prefix"), confMark...), make([]byte, confBlockSize)...)
	template = append(template, "suffix"...)
	conf, err := ConfPathOf(template)
	require.NoError(t, err)
	assert.Empty(t, conf, "the template is not configured")

	image, err := Configure(template, "/usr/lib/txexec/wrapped/x/wrap.conf")
	require.NoError(t, err)
	assert.Len(t, image, len(template))
	conf, err = ConfPathOf(image)
	require.NoError(t, err)
	assert.Equal(t, "/usr/lib/txexec/wrapped/x/wrap.conf", conf)
	assert.True(t, IsLauncher(image))

	_, err = Configure(image, "/other")
	assert.Error(t, err, "a configured launcher is no template")
	_, err = Configure(template, "/"+string(bytes.Repeat([]byte("a"), confBlockSize)))
	assert.Error(t, err, "a path longer than the block")
	assert.False(t, IsLauncher([]byte("a set-ID program")))
	twice := append(bytes.Clone(template), template...)
	assert.False(t, IsLauncher(twice))
}

func TestSecurePath(t *testing.T) {
	testenv.NeedRoot(t, "the files must be root's")
	dir := t.TempDir() // under /tmp: sticky, writable by all, root's
	require.NoError(t, os.Chmod(dir, 0o755))
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, os.Symlink(file, filepath.Join(dir, "link")))

	tmp, err := filepath.EvalSymlinks(os.TempDir())
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(tmp, &st))
	if st.Uid != 0 || st.Mode&unix.S_ISVTX == 0 && st.Mode&0o022 != 0 {
		t.Skipf("%s is not a directory only root can change the entries of", tmp)
	}
	require.NoError(t, SecurePath(file, RegularFile))
	require.NoError(t, SecurePath(sub, Directory))

	for _, tc := range []struct {
		name  string
		path  string
		kind  Kind
		setup func()
		undo  func()
	}{
		{"relative", "f", RegularFile, nil, nil},
		{"dot-dot", sub + "/../f", RegularFile, nil, nil},
		{"symlink", filepath.Join(dir, "link"), RegularFile, nil, nil},
		{"a directory for a file", sub, RegularFile, nil, nil},
		{"group-writable file", file, RegularFile,
			func() { os.Chmod(file, 0o664) }, func() { os.Chmod(file, 0o644) }},
		{"other-writable directory above", file, RegularFile,
			func() { os.Chmod(dir, 0o757) }, func() { os.Chmod(dir, 0o755) }},
		{"file not root's", file, RegularFile,
			func() { os.Chown(file, 1000, 0) }, func() { os.Chown(file, 0, 0) }},
		{"directory above not root's", file, RegularFile,
			func() { os.Chown(dir, 1000, 0) }, func() { os.Chown(dir, 0, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
				defer tc.undo()
			}
			assert.Error(t, SecurePath(tc.path, tc.kind))
		})
	}
	// A sticky directory writable by all is trusted, as /tmp is.
	require.NoError(t, unix.Chmod(dir, 0o1777))
	assert.NoError(t, SecurePath(file, RegularFile))
	require.NoError(t, os.Chmod(dir, 0o755))
}
