package syscalls

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/hostlock"
)

// watchLog records what a HostLockWatch is told.
type watchLog struct{ events []string }

func (w *watchLog) Held()    { w.events = append(w.events, "held") }
func (w *watchLog) Waiting() { w.events = append(w.events, "waiting") }
func (w *watchLog) Waited()  { w.events = append(w.events, "waited") }
func (w *watchLog) Busy()    { w.events = append(w.events, "busy") }

// TestWatchHostWait: a blocking request for a host lock another table
// holds is told Waiting once it has waited LockWaitReported, and Waited
// once when it ends (here granted: the holder lets go once told); one
// granted after a short wait, or at once, is told nothing; without a
// watch the wait is the caller's as it was.
func TestWatchHostWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	original, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(original)
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(original, &st))
	key := hostlock.Key{Dev: st.Dev, Ino: st.Ino}

	for _, tc := range []struct {
		name string
		// release says, from the watch's events and the number of
		// pauses so far, whether the holder lets go now.
		release func(w *watchLog, pauses int) bool
		want    []string
	}{
		{"long", func(w *watchLog, _ int) bool { return len(w.events) > 0 }, []string{"waiting", "waited"}},
		{"short", func(_ *watchLog, pauses int) bool { return pauses == 1 }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, waiter := hostlock.NewTable(), hostlock.NewTable()
			defer waiter.Release()
			require.NoError(t, holder.Flock(key, original, unix.LOCK_EX, nil))
			w := &watchLog{}
			k := &Kernel{HostLockWatch: w}
			pauses := 0
			hostWait, waited := k.watchHostWait(func() error {
				pauses++
				if tc.release(w, pauses) {
					holder.Release()
				}
				if pauses > 1000 {
					return errors.New("never released")
				}
				time.Sleep(time.Millisecond)
				return nil
			})
			require.NoError(t, waiter.Flock(key, original, unix.LOCK_EX, hostWait))
			waited()
			assert.Equal(t, tc.want, w.events)
		})
	}

	// At once: the waiter is never called.
	w := &watchLog{}
	k := &Kernel{HostLockWatch: w}
	table := hostlock.NewTable()
	defer table.Release()
	hostWait, waited := k.watchHostWait(func() error { return errors.New("called") })
	require.NoError(t, table.Flock(key, original, unix.LOCK_EX, hostWait))
	waited()
	assert.Empty(t, w.events)

	// Without a watch, or for a request that does not wait, the waiter
	// is the one given.
	hostWait, _ = (&Kernel{}).watchHostWait(nil)
	assert.Nil(t, hostWait)
	hostWait, _ = k.watchHostWait(nil)
	assert.Nil(t, hostWait)
}

// TestRefusedHostLock: a request that does not wait, refused because
// another table holds the host lock (flock's EWOULDBLOCK, a record lock's
// EAGAIN), is told Busy; one granted, or a blocking request whose wait
// ended otherwise, is not.
func TestRefusedHostLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	original, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(original)
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(original, &st))
	key := hostlock.Key{Dev: st.Dev, Ino: st.Ino}

	holder, other := hostlock.NewTable(), hostlock.NewTable()
	defer holder.Release()
	defer other.Release()
	require.NoError(t, holder.Flock(key, original, unix.LOCK_EX, nil))
	require.NoError(t, holder.Record(key, original, unix.F_WRLCK, 0, 10, nil))
	w := &watchLog{}
	k := &Kernel{HostLockWatch: w}
	tell := func(wait hostlock.Waiter, err error) error {
		k.refusedHostLock(wait, err)
		return err
	}

	require.ErrorIs(t, tell(nil, other.Flock(key, original, unix.LOCK_SH, nil)), unix.EWOULDBLOCK)
	assert.Equal(t, []string{"busy"}, w.events)
	require.ErrorIs(t, tell(nil, other.Record(key, original, unix.F_RDLCK, 5, 6, nil)), unix.EAGAIN)
	assert.Equal(t, []string{"busy", "busy"}, w.events)
	require.NoError(t, tell(nil, other.Record(key, original, unix.F_RDLCK, 10, 20, nil)))
	assert.Equal(t, []string{"busy", "busy"}, w.events, "granted")

	gaveUp := errors.New("interrupted")
	wait := func() error { return gaveUp }
	require.ErrorIs(t, tell(wait, other.Flock(key, original, unix.LOCK_EX, wait)), gaveUp)
	assert.Equal(t, []string{"busy", "busy"}, w.events, "a blocking request is Waiting's")

	(&Kernel{}).refusedHostLock(nil, unix.EAGAIN) // without a watch: nobody to tell
}
