package syscalls

import (
	"bytes"
	"encoding/binary"
	"strings"
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

// FuzzPackDirents packs random directory listings into getdents and
// getdents64 buffers of random sizes and parses them back: records are
// 8-byte aligned and hold their name and type, the entries are those after
// the position in order, as many as fit (the first that does not fit does
// not), never more bytes than the buffer has, and the returned cookie is
// the last entry's (one past the position when not even the first fits).
func FuzzPackDirents(f *testing.F) {
	f.Add("a/bb/ccc", uint64(0), 64, true)
	f.Add("a/bb/ccc", uint64(2), 24, false)
	f.Add("x", uint64(0), 1, true)
	f.Add(".//..//longer-name-than-the-others", uint64(1), 4096, false)
	f.Fuzz(func(t *testing.T, names string, pos uint64, count int, is64 bool) {
		var ents []vfs.Dirent
		for i, n := range splitNames(names) {
			ents = append(ents, vfs.Dirent{Off: uint64(i + 1), Name: n, Ino: uint64(1000 + i), Type: uint8(i % 16)})
		}
		if count < 0 || count > 1<<16 {
			count = int(uint(count) % (1 << 16))
		}
		buf, last := packDirents(ents, pos, count, is64)
		require.LessOrEqual(t, len(buf), count)
		var after []vfs.Dirent
		for _, e := range ents {
			if e.Off > pos {
				after = append(after, e)
			}
		}
		var got []vfs.Dirent
		for rest := buf; len(rest) > 0; {
			require.GreaterOrEqual(t, len(rest), 24)
			reclen := int(binary.NativeEndian.Uint16(rest[16:]))
			require.Zero(t, reclen%8, "aligned")
			require.LessOrEqual(t, reclen, len(rest))
			rec := rest[:reclen]
			var e vfs.Dirent
			e.Ino = binary.NativeEndian.Uint64(rec[0:])
			e.Off = binary.NativeEndian.Uint64(rec[8:])
			nameAt := 18
			if is64 {
				nameAt = 19
				e.Type = rec[18]
			} else {
				e.Type = rec[reclen-1]
			}
			end := bytes.IndexByte(rec[nameAt:], 0)
			require.GreaterOrEqual(t, end, 0, "NUL-terminated")
			e.Name = string(rec[nameAt : nameAt+end])
			got = append(got, e)
			rest = rest[reclen:]
		}
		require.LessOrEqual(t, len(got), len(after))
		if len(got) > 0 {
			assert.Equal(t, after[:len(got)], got, "the entries after the position, in order")
		}
		switch {
		case len(got) > 0:
			assert.Equal(t, got[len(got)-1].Off, last)
		case len(after) > 0:
			assert.Equal(t, pos+1, last, "too small for one entry")
		default:
			assert.Equal(t, pos, last)
		}
		if len(got) < len(after) {
			next := len(packOne(after[len(got)], is64))
			assert.Greater(t, len(buf)+next, count, "the next entry does not fit")
		}
	})
}

// splitNames splits s into directory entry names (no NUL, no "/", not
// empty), at most 64.
func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(strings.ReplaceAll(s, "\x00", "/"), "/") {
		if n != "" && len(out) < 64 {
			out = append(out, n)
		}
	}
	return out
}

// packOne is the record of one entry alone.
func packOne(e vfs.Dirent, is64 bool) []byte {
	e.Off = 1
	b, _ := packDirents([]vfs.Dirent{e}, 0, 1<<20, is64)
	return b
}

// FuzzStatxArgs compares statx's checks of its flags and mask for a path
// (statxArgsErr, then statCall's refusal of unknown flags) with the
// kernel's, on "/", which every stat reaches: the kernel answers EINVAL
// exactly when txexec does.
func FuzzStatxArgs(f *testing.F) {
	f.Add(uint32(0), uint32(unix.STATX_BASIC_STATS))
	f.Add(uint32(unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC), uint32(unix.STATX_ALL))
	f.Add(uint32(atStatxSyncType), uint32(0))
	f.Add(uint32(0), uint32(unix.STATX__RESERVED))
	f.Add(uint32(unix.AT_REMOVEDIR), uint32(0))
	f.Add(uint32(0), uint32(0xffffffff)&^uint32(unix.STATX__RESERVED))
	root := []byte("/\x00")
	f.Fuzz(func(t *testing.T, flags, mask uint32) {
		var stx unix.Statx_t
		_, _, kernel := unix.Syscall6(unix.SYS_STATX, atFDCWD, uintptr(unsafe.Pointer(&root[0])), uintptr(flags), uintptr(mask), uintptr(unsafe.Pointer(&stx)), 0)
		ours := statxArgsErr(int(int32(flags)), mask)
		if ours == nil && int(int32(flags))&^statFlags != 0 {
			ours = unix.EINVAL
		}
		if kernel == 0 {
			assert.NoError(t, ours, "the kernel accepts flags %#x mask %#x", flags, mask)
			return
		}
		assert.Equal(t, kernel, ours, "flags %#x mask %#x", flags, mask)
	})
}
