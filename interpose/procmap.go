package interpose

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The PROCMAP_QUERY ioctl of <linux/fs.h> (Linux 6.11), which
// golang.org/x/sys/unix does not define: on an open /proc/PID/maps, it
// describes the one mapping that holds an address, without the kernel
// formatting, and the supervisor parsing, every line of the file (which cost
// the rewriter more than the rest of a rewrite: a process of the C build has
// about 60 mappings).

// procmapQuery is struct procmap_query.
type procmapQuery struct {
	Size        uint64 // the struct's size, for the kernel's versioning
	QueryFlags  uint64 // in: procmapQuery*
	QueryAddr   uint64 // in
	VMAStart    uint64 // out
	VMAEnd      uint64 // out
	VMAFlags    uint64 // out
	VMAPageSize uint64 // out
	VMAOffset   uint64 // out: the file offset mapped at VMAStart
	Inode       uint64 // out
	DevMajor    uint32 // out
	DevMinor    uint32 // out
	VMANameSize uint32 // in/out: 0, no name asked for
	BuildIDSize uint32 // in/out: 0, no build ID asked for
	VMANameAddr uint64 // in
	BuildIDAddr uint64 // in
}

// procmapQueryIoctl is _IOWR('f', 17, struct procmap_query).
const procmapQueryIoctl = 3<<30 | uint32(unsafe.Sizeof(procmapQuery{}))<<16 | 'f'<<8 | 17

// The query's flags: only a mapping with these properties answers
// (PROCMAP_QUERY_VMA_EXECUTABLE, PROCMAP_QUERY_FILE_BACKED_VMA); without
// PROCMAP_QUERY_COVERING_OR_NEXT_VMA, only one that holds the address.
const (
	procmapQueryExecutable = 0x04
	procmapQueryNext       = 0x10 // PROCMAP_QUERY_COVERING_OR_NEXT_VMA
	procmapQueryFileBacked = 0x20
)

// The kernel's struct was 104 bytes when the ioctl came (Linux 6.11); a
// kernel that knows a longer one accepts this one.
const _ = uint16(unsafe.Sizeof(procmapQuery{}) - 104)
const _ = uint16(104 - unsafe.Sizeof(procmapQuery{}))

// errNoProcmapQuery: the kernel has no PROCMAP_QUERY (before 6.11: ENOTTY;
// or it refuses the struct: EINVAL).
var errNoProcmapQuery = errors.New("no PROCMAP_QUERY")

// queryExecFileMapping asks maps, a descriptor of /proc/PID/maps, for the
// executable file mapping that holds address a (with procmapQueryNext in
// flags: or the first one above it). found is false when there is none
// (anonymous memory, a mapping that is not executable, none);
// errNoProcmapQuery when the kernel cannot say.
func queryExecFileMapping(maps int, a uint64, flags uint64) (q procmapQuery, found bool, err error) {
	q = procmapQuery{
		Size:       uint64(unsafe.Sizeof(q)),
		QueryFlags: procmapQueryExecutable | procmapQueryFileBacked | flags,
		QueryAddr:  a,
	}
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(maps), uintptr(procmapQueryIoctl), uintptr(unsafe.Pointer(&q)))
		switch e {
		case unix.EINTR:
			continue
		case 0:
			return q, true, nil
		case unix.ENOENT:
			return q, false, nil
		case unix.ENOTTY, unix.EINVAL:
			return q, false, errNoProcmapQuery
		}
		return q, false, os.NewSyscallError("ioctl PROCMAP_QUERY", e)
	}
}
