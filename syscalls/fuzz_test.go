package syscalls

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/vfs"
)

// atFDCWD is AT_FDCWD as a register holds it.
var atFDCWD = func() uintptr { fd := int64(unix.AT_FDCWD); return uintptr(fd) }()

// FuzzOpenHow compares openat2's decoding of struct open_how (with the
// view's checks of its flags) with the kernel's, differentially: the
// kernel checks the struct and its flags before it reads the path, so
// openat2 with a NULL path answers EFAULT exactly when it accepts them,
// and otherwise the errno txexec must give too. Nothing is opened.
func FuzzOpenHow(f *testing.F) {
	for _, seed := range []struct {
		flags, mode, resolve uint64
		tail                 []byte
	}{
		{unix.O_RDONLY, 0, 0, nil},
		{unix.O_WRONLY | unix.O_CREAT, 0o644, 0, nil},
		{unix.O_DIRECTORY, 0o644, 0, nil},
		{unix.O_TMPFILE | unix.O_RDWR, 0o600, 0, nil},
		{unix.O_TMPFILE | unix.O_RDONLY, 0, 0, nil},
		{unix.O_PATH | unix.O_NOFOLLOW, 0, unix.RESOLVE_BENEATH, nil},
		{unix.O_PATH | unix.O_TRUNC, 0, 0, nil},
		{unix.O_CREAT | unix.O_DIRECTORY, 0, 0, nil},
		{0, 0, unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT, nil},
		{unix.O_CREAT, 0, 0x20, nil},
		{1 << 40, 0, 0, nil},
		{0, 0, 0, []byte{0, 0, 1}},
		{0, 0o10000, 0, make([]byte, 8)},
	} {
		f.Add(seed.flags, seed.mode, seed.resolve, seed.tail)
	}
	f.Fuzz(func(t *testing.T, flags, mode, resolve uint64, tail []byte) {
		if len(tail) > 4096-openHowSizeVer0 {
			tail = tail[:4096-openHowSizeVer0]
		}
		buf := make([]byte, openHowSizeVer0+len(tail))
		binary.NativeEndian.PutUint64(buf[0:], flags)
		binary.NativeEndian.PutUint64(buf[8:], mode)
		binary.NativeEndian.PutUint64(buf[16:], resolve)
		copy(buf[openHowSizeVer0:], tail)

		_, _, kernel := unix.Syscall6(unix.SYS_OPENAT2, atFDCWD, 0, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
		require.NotZero(t, kernel, "openat2 of a NULL path succeeded")
		how, err := decodeOpenHow(buf)
		if kernel == unix.EFAULT {
			require.NoError(t, err, "the kernel accepts flags %#x mode %#o resolve %#x (+%d bytes)", flags, mode, resolve, len(tail))
			assert.Equal(t, vfs.OpenHow{Flags: flags, Mode: uint32(mode), Resolve: resolve}, how)
			return
		}
		assert.Equal(t, kernel, err, "flags %#x mode %#o resolve %#x (+%d bytes)", flags, mode, resolve, len(tail))
	})
}
