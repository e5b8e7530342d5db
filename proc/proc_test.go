package proc

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestReadCredGoneOrInternal: a thread whose /proc entry is missing is
// gone (ESRCH); any other failure to read it is the supervisor's, an
// internal error that is not an errno (a handler answers errnos to the
// caller, who is alive).
func TestReadCredGoneOrInternal(t *testing.T) {
	c, err := ReadCred(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, uint32(os.Geteuid()), c.EUID)

	_, err = ReadCred(1 << 30) // above any pid_max
	assert.Equal(t, unix.ESRCH, err)

	err = goneOr(&os.PathError{Op: "open", Path: "/proc/1/status", Err: unix.EMFILE})
	var e unix.Errno
	assert.False(t, errors.As(err, &e), "not an errno: %v", err)
	assert.Contains(t, err.Error(), "too many open files")
}
