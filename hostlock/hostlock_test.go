package hostlock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// hostFile makes a file and returns its key, a read-only descriptor on it
// (what the view hands the table) and a function that opens another
// description of it, standing for a process outside the transaction (flock
// and OFD locks conflict between descriptions, whatever their process).
func hostFile(t *testing.T) (Key, int, func(flags int) int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lock")
	require.NoError(t, os.WriteFile(p, make([]byte, 100), 0o644))
	open := func(flags int) int {
		fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	orig := open(unix.O_RDONLY)
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(orig, &st))
	return Key{st.Dev, st.Ino}, orig, open
}

// outsideRecord tries an OFD lock through fd, as an outside process would.
func outsideRecord(fd int, typ int16, start, length int64) error {
	lk := unix.Flock_t{Type: typ, Start: start, Len: length}
	return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
}

func TestFlockHeldUntilRelease(t *testing.T) {
	tests := []struct {
		name     string
		take     []int // the transaction's requests, in order
		outside  int   // then an outside request
		excluded bool
	}{
		{"exclusive excludes a shared lock", []int{unix.LOCK_EX}, unix.LOCK_SH, true},
		{"shared lets a shared lock in", []int{unix.LOCK_SH}, unix.LOCK_SH, false},
		{"shared excludes an exclusive lock", []int{unix.LOCK_SH}, unix.LOCK_EX, true},
		{"a shared request after an exclusive one keeps it exclusive", []int{unix.LOCK_EX, unix.LOCK_SH}, unix.LOCK_SH, true},
		{"shared converted to exclusive", []int{unix.LOCK_SH, unix.LOCK_EX}, unix.LOCK_SH, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, orig, open := hostFile(t)
			tab := NewTable()
			for _, how := range tt.take {
				require.NoError(t, tab.Flock(key, orig, how, nil))
			}
			other := open(unix.O_RDONLY)
			err := unix.Flock(other, tt.outside|unix.LOCK_NB)
			if !tt.excluded {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, unix.EWOULDBLOCK)
			tab.Release()
			require.NoError(t, unix.Flock(other, tt.outside|unix.LOCK_NB), "free once released")
		})
	}
}

// TestFlockConversionKeepsTheSharedLock: a conversion to exclusive that
// meets another shared holder fails and leaves the transaction its shared
// lock, which still excludes an exclusive one.
func TestFlockConversionKeepsTheSharedLock(t *testing.T) {
	key, orig, open := hostFile(t)
	tab := NewTable()
	defer tab.Release()
	require.NoError(t, tab.Flock(key, orig, unix.LOCK_SH, nil))
	reader := open(unix.O_RDONLY)
	require.NoError(t, unix.Flock(reader, unix.LOCK_SH|unix.LOCK_NB))
	require.ErrorIs(t, tab.Flock(key, orig, unix.LOCK_EX, nil), unix.EWOULDBLOCK)
	require.NoError(t, unix.Flock(reader, unix.LOCK_UN))
	writer := open(unix.O_RDONLY)
	require.ErrorIs(t, unix.Flock(writer, unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK, "the shared lock is still held")
}

func TestRecordLocks(t *testing.T) {
	type req struct {
		typ        int16
		start, end int64
	}
	type probe struct {
		typ           int16
		start, length int64
		excluded      bool
	}
	tests := []struct {
		name   string
		take   []req
		probes []probe
	}{
		{"write lock excludes readers of its range only", []req{{unix.F_WRLCK, 0, 10}},
			[]probe{{unix.F_RDLCK, 5, 1, true}, {unix.F_RDLCK, 10, 5, false}}},
		{"read lock over a write lock does not weaken it", []req{{unix.F_WRLCK, 0, 10}, {unix.F_RDLCK, 0, 20}},
			[]probe{{unix.F_RDLCK, 5, 1, true}, {unix.F_RDLCK, 15, 1, false}, {unix.F_WRLCK, 15, 1, true}}},
		{"read, then write through a writable description", []req{{unix.F_RDLCK, 0, 10}, {unix.F_WRLCK, 20, 30}},
			[]probe{{unix.F_WRLCK, 5, 1, true}, {unix.F_RDLCK, 5, 1, false}, {unix.F_RDLCK, 25, 1, true}}},
		{"to the end of the file", []req{{unix.F_WRLCK, 50, EOF}},
			[]probe{{unix.F_RDLCK, 1 << 40, 1, true}, {unix.F_RDLCK, 0, 50, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, orig, open := hostFile(t)
			tab := NewTable()
			for _, r := range tt.take {
				require.NoError(t, tab.Record(key, orig, r.typ, r.start, r.end, nil))
			}
			other := open(unix.O_RDWR)
			for _, p := range tt.probes {
				err := outsideRecord(other, p.typ, p.start, p.length)
				if p.excluded {
					assert.ErrorIs(t, err, unix.EAGAIN, "%+v", p)
				} else if assert.NoError(t, err, "%+v", p) {
					require.NoError(t, outsideRecord(other, unix.F_UNLCK, 0, 0))
				}
			}
			tab.Release()
			require.NoError(t, outsideRecord(other, unix.F_WRLCK, 0, 0), "free once released")
		})
	}
}

// TestRecordWaitsAndTests: a blocking request waits while another process
// holds a conflicting lock (Test shows it), a non-blocking one fails, and
// the waiter's error ends a wait.
func TestRecordWaitsAndTests(t *testing.T) {
	key, orig, open := hostFile(t)
	tab := NewTable()
	defer tab.Release()
	other := open(unix.O_RDWR)
	require.NoError(t, outsideRecord(other, unix.F_WRLCK, 0, 10))

	lk, err := tab.Test(key, orig, unix.F_RDLCK, 0, EOF)
	require.NoError(t, err)
	assert.Equal(t, int16(unix.F_WRLCK), lk.Type)
	assert.Equal(t, int32(-1), lk.Pid, "an OFD lock has no pid")
	assert.Equal(t, int64(10), lk.Len)

	require.ErrorIs(t, tab.Record(key, orig, unix.F_RDLCK, 5, 6, nil), unix.EAGAIN)
	stop := errors.New("interrupted")
	require.ErrorIs(t, tab.Record(key, orig, unix.F_RDLCK, 5, 6, func() error { return stop }), stop)

	waits := 0
	require.NoError(t, tab.Record(key, orig, unix.F_RDLCK, 5, 6, func() error {
		waits++
		return outsideRecord(other, unix.F_UNLCK, 0, 0)
	}))
	assert.Equal(t, 1, waits)
	lk, err = tab.Test(key, orig, unix.F_WRLCK, 0, EOF)
	require.NoError(t, err)
	assert.Equal(t, int16(unix.F_UNLCK), lk.Type, "the transaction's own locks conflict with nothing")
	require.ErrorIs(t, outsideRecord(other, unix.F_WRLCK, 5, 1), unix.EAGAIN)
}
