package vfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func timeBefore(a, b unix.Timespec) bool {
	return a.Sec < b.Sec || a.Sec == b.Sec && a.Nsec < b.Nsec
}

// TestDirTimesKeepTheKernelsOrder: a directory whose entries the view
// changes and a staged file in it that the kernel stamps as it is written
// show mtimes in the order of the changes, both ways, as on Linux. Half the
// rounds follow an idle pause, after which a view stamped from
// CLOCK_REALTIME showed the file written after the directory as the
// earlier one in some of them (the kernel's coarse clock lags the fine
// one).
func TestDirTimesKeepTheKernelsOrder(t *testing.T) {
	const rounds, pauseEvery = 1000, 2
	for _, order := range []string{"file-after-dir", "dir-after-file"} {
		t.Run(order, func(t *testing.T) {
			e := newEnv(t, func(dir string) {
				require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "d", "file"), nil, 0o644))
			})
			fd, err := e.v.Open(e.c, e.c.Cwd, "d/file", OpenHow{Flags: unix.O_WRONLY | unix.O_APPEND})
			require.NoError(t, err)
			defer unix.Close(fd)
			write := func() {
				_, err := unix.Write(fd, []byte("x"))
				require.NoError(t, err)
			}
			inversions := 0
			for i := range rounds {
				if order == "dir-after-file" {
					write()
				}
				efd, err := e.v.Open(e.c, e.c.Cwd, "d/entry", OpenHow{Flags: unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, Mode: 0o644})
				require.NoError(t, err)
				unix.Close(efd)
				require.NoError(t, e.v.Unlink(e.c, e.c.Cwd, "d/entry", 0))
				if order == "file-after-dir" {
					write()
				}
				d, err := e.v.Stat(e.c, e.c.Cwd, "d", 0)
				require.NoError(t, err)
				f, err := e.v.Stat(e.c, e.c.Cwd, "d/file", 0)
				require.NoError(t, err)
				if order == "file-after-dir" && timeBefore(f.Mtim, d.Mtim) || order == "dir-after-file" && timeBefore(d.Mtim, f.Mtim) {
					inversions++
				}
				if i%pauseEvery == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			assert.Zero(t, inversions, "rounds of %d whose last change shows the earlier mtime", rounds)
		})
	}
}

// TestFileClockFailureDooms: a change the view cannot stamp with the
// kernel's file clock (here: its file closed) dooms the transaction,
// saying why, rather than showing a time from another clock.
func TestFileClockFailureDooms(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, e.v.Doomed())
	require.NoError(t, e.v.clock.Close())
	require.NoError(t, e.v.Mkdir(e.c, e.c.Cwd, "d", 0o755))
	err := e.v.Doomed()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read the kernel's file clock")
	assert.ErrorIs(t, err, unix.EBADF)
}
