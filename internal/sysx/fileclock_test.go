package sysx_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/sysx"
	"txexec/internal/testenv"
)

func newFileClock(t *testing.T) *sysx.FileClock {
	t.Helper()
	c, err := sysx.NewFileClock()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

func before(a, b unix.Timespec) bool {
	return a.Sec < b.Sec || a.Sec == b.Sec && a.Nsec < b.Nsec
}

// clockRounds rounds, half of them after an idle pause, span many ticks of
// the coarse clock, where a clock other than the kernel's goes out of order
// with its stamps: a CLOCK_REALTIME reading was later than the coarse stamp
// of a write after it in 3 to 80 of them (mostly after a pause, as a
// process served by the supervisor has one at each trapped call; a busy
// loop sees it about once a second), a CLOCK_REALTIME_COARSE reading
// earlier than the fine stamp of a write before it in every one.
const (
	clockRounds = 1000
	// pauseEvery rounds, the loop sleeps for pause.
	pauseEvery = 2
	pause      = time.Millisecond
)

// TestFileClockOrdersWithFileStamps: a reading taken before a file is
// written is never later than the file's new mtime, and one taken after it
// never earlier, on the file systems the staging areas use (the test's
// temporary directory, and tmpfs): the kernel's stamps of every file
// system come from one clock with one floor.
func TestFileClockOrdersWithFileStamps(t *testing.T) {
	c := newFileClock(t)
	dirs := map[string]string{"temporary directory": t.TempDir()}
	var fs unix.Statfs_t
	if unix.Statfs("/dev/shm", &fs) == nil && fs.Type == unix.TMPFS_MAGIC {
		shm, err := os.MkdirTemp("/dev/shm", "fileclock-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(shm) })
		dirs["tmpfs"] = shm
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			f, err := os.Create(filepath.Join(dir, "file"))
			require.NoError(t, err)
			defer f.Close()
			late, early := 0, 0
			for i := range clockRounds {
				t1, err := c.Now()
				require.NoError(t, err)
				_, err = f.Write([]byte("x"))
				require.NoError(t, err)
				// The file's ctime read since its change: its next
				// write in the tick gets a fine-grained stamp (6.13+).
				var st unix.Stat_t
				require.NoError(t, unix.Fstat(int(f.Fd()), &st))
				t2, err := c.Now()
				require.NoError(t, err)
				if before(st.Mtim, t1) {
					late++
				}
				if before(t2, st.Mtim) {
					early++
				}
				if i%pauseEvery == 0 {
					time.Sleep(pause)
				}
			}
			assert.Zero(t, late, "readings later than the mtime of a file written after them, of %d", clockRounds)
			assert.Zero(t, early, "readings earlier than the mtime of a file written before them, of %d", clockRounds)
		})
	}
}

// TestFileClockNeverGoesBack: successive readings do not decrease.
func TestFileClockNeverGoesBack(t *testing.T) {
	c := newFileClock(t)
	last, err := c.Now()
	require.NoError(t, err)
	back := 0
	for range clockRounds {
		now, err := c.Now()
		require.NoError(t, err)
		if before(now, last) {
			back++
		}
		last = now
	}
	assert.Zero(t, back)
}

// TestFileClockAsAnotherUser: the clock reads the same on a thread with an
// unprivileged caller's credentials, as the supervisor's threads serving
// one have (Self.AsCaller).
func TestFileClockAsAnotherUser(t *testing.T) {
	testenv.NeedRoot(t, "switches credentials")
	c := newFileClock(t)
	s, err := sysx.ReadSelf()
	require.NoError(t, err)
	start, err := c.Now()
	require.NoError(t, err)
	var got unix.Timespec
	require.NoError(t, s.AsCaller(&sysx.Cred{FSUID: 65534, FSGID: 65534, Groups: []uint32{}}, func() error {
		var err error
		got, err = c.Now()
		return err
	}))
	assert.False(t, before(got, start), "%v after %v", got, start)
}

// BenchmarkFileClockNow: one reading (utimensat and fstat of a memfd).
func BenchmarkFileClockNow(b *testing.B) {
	c, err := sysx.NewFileClock()
	require.NoError(b, err)
	defer c.Close()
	for b.Loop() {
		if _, err := c.Now(); err != nil {
			b.Fatal(err)
		}
	}
}
