package interpose

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// FuzzReadPath copies in random bytes from this process as a path
// argument, placed anywhere in two readable pages followed by an
// inaccessible one, and compares with getname()'s rules: the bytes up to
// the first NUL; ENAMETOOLONG when none is within max bytes; EFAULT when
// the string runs into the inaccessible page first.
func FuzzReadPath(f *testing.F) {
	f.Add([]byte("/etc/passwd\x00"), uint16(0), uint16(PathMax))
	f.Add([]byte("no terminator"), uint16(8192-13), uint16(PathMax))
	f.Add(bytes.Repeat([]byte("p/"), 3000), uint16(100), uint16(PathMax))
	f.Add([]byte("\x00"), uint16(8191), uint16(1))
	f.Add([]byte("ab\x00"), uint16(4094), uint16(2))
	f.Add(bytes.Repeat([]byte{0xff}, 300), uint16(4000), uint16(256))
	ps := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 3*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(f, err)
	f.Cleanup(func() { unix.Munmap(mem) })
	require.NoError(f, unix.Mprotect(mem[2*ps:], unix.PROT_NONE))
	readable := mem[:2*ps]
	m := Memory{Tid: os.Getpid()}

	f.Fuzz(func(t *testing.T, data []byte, at, max uint16) {
		off := int(at) % len(readable)
		limit := int(max)%(2*PathMax) + 1
		clear(readable)
		copy(readable[off:], data)
		got, err := m.ReadString(uintptr(unsafe.Pointer(&readable[off])), limit)

		avail := readable[off:]
		scan := avail[:min(len(avail), limit)]
		switch i := bytes.IndexByte(scan, 0); {
		case i >= 0:
			require.NoError(t, err)
			assert.Equal(t, string(scan[:i]), got)
		case len(avail) >= limit:
			assert.Equal(t, unix.ENAMETOOLONG, err)
		default:
			assert.Equal(t, unix.EFAULT, err)
		}
	})
}
