package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// deepLevels and deepName make a tree deeper than PATH_MAX (45 levels of
// 105 bytes): each call's path is short (relative), the whole is not.
const deepLevels, deepName = 45, "dir_%0100d"

// deepWalk is a Perl prelude that enters the deepest level by relative
// chdir.
const deepWalk = `for my $n (0..44) { chdir sprintf("dir_%0100d", $n) or die "chdir $n: $!"; } `

// TestTreeDeeperThanPathMax: a transaction that reads and changes a host
// tree deeper than PATH_MAX commits (its validation and write-through
// reach the paths that are too long for one system call), and one that
// builds such a tree commits it, as Linux makes it.
func TestTreeDeeperThanPathMax(t *testing.T) {
	requireTools(t, "perl")
	dir := t.TempDir()
	build := `for my $n (0..44) { my $d = sprintf("dir_%0100d", $n); mkdir $d or die; chdir $d or die; ` +
		`open(my $f, ">", "f.txt") or die; print $f "level $n\n"; close $f; }`
	got := run(t, native, command{Argv: []string{"perl", "-e", build}, Dir: dir})
	require.Equal(t, 0, got.Status, got.Stderr)

	change := deepWalk + `opendir(my $dh, ".") or die; print join(" ", sort grep !/^\./, readdir $dh), "\n"; ` +
		`open(my $f, ">>", "f.txt") or die "open: $!"; print $f "appended\n"; close $f; ` +
		`mkdir "newsub" or die "mkdir: $!"; open($f, ">", "newsub/g") or die; print $f "new\n"; close $f;`
	got = run(t, transaction, command{Argv: []string{"perl", "-e", change}, Dir: dir})
	require.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
	assert.Equal(t, "f.txt\n", got.Stdout)
	assert.Equal(t, "level 44\nappended\n", readDeep(t, dir, "f.txt"))
	assert.Equal(t, "new\n", readDeep(t, dir, "newsub/g"))

	dir2 := t.TempDir()
	got = run(t, transaction, command{Argv: []string{"perl", "-e", build}, Dir: dir2})
	require.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
	assert.Equal(t, "level 44\n", readDeep(t, dir2, "f.txt"))
}

// readDeep reads name in the deepest level of the tree under dir, walking
// down one level at a time.
func readDeep(t *testing.T, dir, name string) string {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	path := dir
	for n := range deepLevels {
		d := fmt.Sprintf(deepName, n)
		next, err := unix.Openat(fd, d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		require.NoError(t, err, "level %d", n)
		fd, path = next, filepath.Join(path, d)
	}
	defer unix.Close(fd)
	require.Greater(t, len(path), unix.PathMax)
	f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	file := os.NewFile(uintptr(f), name)
	defer file.Close()
	b := make([]byte, 4096)
	k, _ := file.Read(b)
	return string(b[:k])
}
