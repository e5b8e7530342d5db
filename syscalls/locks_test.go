package syscalls

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/bpf"

	"txexec/hostlock"
	"txexec/interpose"
)

// TestFcntlLockCommandsDecideInFilter: of fcntl's commands, the filter
// sends the supervisor the record-lock ones (whatever the register's upper
// half, which the kernel ignores), and lets the kernel run the rest.
func TestFcntlLockCommandsDecideInFilter(t *testing.T) {
	table := newTestTable(t)
	compiled := compiledFilter(t, table.Rules())
	e := table.Lookup(unix.SYS_FCNTL)
	for _, tc := range []struct {
		cmd     uint64
		trapped bool
	}{
		{unix.F_GETLK, true}, {unix.F_SETLK, true}, {unix.F_SETLKW, true},
		{unix.F_OFD_GETLK, true}, {unix.F_OFD_SETLK, true}, {unix.F_OFD_SETLKW, true},
		{1<<32 | unix.F_SETLKW, true},
		{unix.F_GETFL, false}, {unix.F_SETFL, false}, {unix.F_GETFD, false}, {unix.F_SETFD, false},
		{unix.F_DUPFD_CLOEXEC, false}, {unix.F_SETLEASE, false}, {1<<32 | unix.F_GETFL, false},
	} {
		t.Run(strconv.FormatUint(tc.cmd, 16), func(t *testing.T) {
			args := [6]interpose.Arg{3, interpose.Arg(tc.cmd)}
			data := seccompData(unix.SYS_FCNTL, unix.AUDIT_ARCH_X86_64)
			for i, a := range args {
				putArg(data, i, uint64(a))
			}
			ret, err := bpf.Exec[bpf.NativeEndian](compiled, data)
			require.NoError(t, err)
			if !tc.trapped {
				assert.Equal(t, uint32(unix.SECCOMP_RET_ALLOW), ret)
				assert.Nil(t, e.HandlerFor(args))
				return
			}
			assert.Equal(t, uint32(unix.SECCOMP_RET_USER_NOTIF), ret)
			require.NotNil(t, e.HandlerFor(args))
			assert.Equal(t, "Fcntl", funcName(e.HandlerFor(args)))
		})
	}
}

// TestLockRange: a struct flock's range in absolute offsets, counted from
// the description's offset or its file's size as the kernel counts them,
// with its errors.
func TestLockRange(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Write(make([]byte, 100))
	require.NoError(t, err)
	_, err = f.Seek(30, 0)
	require.NoError(t, err)
	fd := int(f.Fd())
	for _, tc := range []struct {
		name       string
		lk         unix.Flock_t
		start, end int64
		err        error
	}{
		{"from the start", unix.Flock_t{Whence: unix.SEEK_SET, Start: 10, Len: 5}, 10, 15, nil},
		{"to the end of the file", unix.Flock_t{Whence: unix.SEEK_SET, Start: 10}, 10, hostlock.EOF, nil},
		{"from the offset", unix.Flock_t{Whence: unix.SEEK_CUR, Start: -10, Len: 5}, 20, 25, nil},
		{"from the size", unix.Flock_t{Whence: unix.SEEK_END, Start: 0, Len: 1}, 100, 101, nil},
		{"a negative length ends at the start", unix.Flock_t{Whence: unix.SEEK_SET, Start: 10, Len: -4}, 6, 10, nil},
		{"before the file", unix.Flock_t{Whence: unix.SEEK_SET, Start: -1, Len: 1}, 0, 0, unix.EINVAL},
		{"a negative length past the start", unix.Flock_t{Whence: unix.SEEK_SET, Start: 2, Len: -4}, 0, 0, unix.EINVAL},
		{"up to the largest offset", unix.Flock_t{Whence: unix.SEEK_SET, Start: 1, Len: math.MaxInt64}, 1, hostlock.EOF, nil},
		{"beyond the largest offset", unix.Flock_t{Whence: unix.SEEK_SET, Start: 2, Len: math.MaxInt64}, 0, 0, unix.EOVERFLOW},
		{"a start beyond it", unix.Flock_t{Whence: unix.SEEK_END, Start: math.MaxInt64}, 0, 0, unix.EOVERFLOW},
		{"no such whence", unix.Flock_t{Whence: 3}, 0, 0, unix.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, end, err := lockRange(fd, &tc.lk)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []int64{tc.start, tc.end}, []int64{start, end})
		})
	}
}
