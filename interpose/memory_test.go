package interpose

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestReadString copies strings in from this process itself, placed at the
// end of a readable page that is followed by an inaccessible one, as
// getname() would: a string that ends before the boundary is read, one that
// runs into it is EFAULT, one without a terminator within max is
// ENAMETOOLONG.
func TestReadString(t *testing.T) {
	ps := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 3*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	require.NoError(t, unix.Mprotect(mem[2*ps:], unix.PROT_NONE))
	end := 2 * ps // first inaccessible byte
	base := uintptr(unsafe.Pointer(&mem[0]))
	m := Memory{Tid: os.Getpid()}

	// place writes s (and, if nul, a terminator) so that it ends at end.
	place := func(s string, nul bool) uintptr {
		clear(mem[:end])
		n := len(s)
		if nul {
			n++
		}
		copy(mem[end-n:], s)
		return base + uintptr(end-n)
	}
	long := strings.Repeat("p/", 700) // 1400 bytes: crosses a page boundary
	for _, tc := range []struct {
		name string
		s    string
		nul  bool
		max  int
		want string
		err  error
	}{
		{"short", "/etc/passwd", true, PathMax, "/etc/passwd", nil},
		{"empty", "", true, PathMax, "", nil},
		{"exactly the short read", strings.Repeat("a", shortRead-1), true, PathMax, strings.Repeat("a", shortRead-1), nil},
		{"one past the short read", strings.Repeat("b", shortRead), true, PathMax, strings.Repeat("b", shortRead), nil},
		{"long across pages", long, true, PathMax, long, nil},
		{"runs into unmapped page", "no-terminator", false, PathMax, "", unix.EFAULT},
		{"longer than max", strings.Repeat("c", 100), true, 50, "", unix.ENAMETOOLONG},
		{"terminator is byte max", strings.Repeat("d", 49), true, 50, strings.Repeat("d", 49), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.ReadString(place(tc.s, tc.nul), tc.max)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err = m.ReadString(0, PathMax)
	require.ErrorIs(t, err, unix.EFAULT)
}

func TestMemoryReadMarksCall(t *testing.T) {
	c := &Call{Tid: os.Getpid()}
	c.Memory = Memory{Tid: c.Tid, read: &c.memRead}
	var b [8]byte
	require.False(t, c.MemoryRead())
	require.NoError(t, c.Read(uintptr(unsafe.Pointer(&b[0])), b[:]))
	require.True(t, c.MemoryRead())
}
