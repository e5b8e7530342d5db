package testenv

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
)

// SkipOrFail skips the test with the reason, or fails it when CI=true: in
// CI every prerequisite of the suite must be there.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: missing prerequisites are failures)", msg)
	}
	t.Skip(msg)
}

// NeedRoot skips (or fails in CI) unless the test runs as root; why says
// what needs it.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "needs root: %s", why)
	}
}

// ChangeInodeFlags sets set and clears clear in the inode flags of path and
// returns those it found, skipping (or failing in CI) where the file
// system keeps none.
func ChangeInodeFlags(t testing.TB, path string, set, clear uint32) uint32 {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	f, err := sysx.ChangeInodeFlags(fd, set, clear)
	if sysx.NoInodeFlags(err) {
		SkipOrFail(t, "%s: no inode flags on this file system", path)
	}
	require.NoError(t, err)
	return f
}

// InodeFlags returns the inode flags of path.
func InodeFlags(t testing.TB, path string) uint32 {
	t.Helper()
	return ChangeInodeFlags(t, path, 0, 0)
}

// AddInodeFlags sets f on path until the test ends, so that its temporary
// directory can be removed.
func AddInodeFlags(t testing.TB, path string, f uint32) {
	t.Helper()
	ChangeInodeFlags(t, path, f, 0)
	t.Cleanup(func() { ClearInodeFlags(path) })
}

// ClearInodeFlags clears the immutable and append-only flags of path, if
// it is there: for clean-ups, which must not fail.
func ClearInodeFlags(path string) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	sysx.ChangeInodeFlags(fd, 0, sysx.FlagImmutable|sysx.FlagAppend)
}
