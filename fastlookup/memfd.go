package fastlookup

import (
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shared is a memfd mapped shared into the supervisor.
type shared struct {
	fd  int
	mem []byte
}

// newShared makes a memfd of size bytes, maps it read-write into the
// supervisor and seals its size: a program that holds the descriptor cannot
// shrink it under the supervisor's mapping (which would raise SIGBUS in the
// supervisor). With futureWrite no writable mapping can be made of it any
// more, by anyone: the tree's sets reach the programs read-only.
func newShared(name string, size int, futureWrite bool) (*shared, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("ftruncate", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("mmap", err)
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	if futureWrite {
		seals |= unix.F_SEAL_FUTURE_WRITE
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Munmap(mem)
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl F_ADD_SEALS", err)
	}
	return &shared{fd: fd, mem: mem}, nil
}

func (s *shared) ptr() unsafe.Pointer { return unsafe.Pointer(&s.mem[0]) }

// readOnlyFD opens another descriptor on the memfd, for reading only: a
// mapping of it can never be made writable (mprotect refuses).
func (s *shared) readOnlyFD() (int, error) {
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(s.fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "memfd", Err: err}
	}
	return fd, nil
}

func (s *shared) close() {
	if s.mem != nil {
		unix.Munmap(s.mem)
		s.mem = nil
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}
