package sysx

import (
	"os"

	"golang.org/x/sys/unix"
)

// A FileClock reads the time the kernel stamps files with: the time a
// file changed at that instant gets.
//
// That is not the time any clock_gettime clock reads. The kernel takes a
// file's new mtime and ctime from the coarse clock, which moves once a
// tick (4 ms at HZ=250), and since Linux 6.13 (multigrain timestamps,
// fs/inode.c inode_set_ctime_current) from the fine-grained clock when the
// file's ctime was read since its last change and the coarse clock has
// not moved past it, with a global floor (kernel/time/timekeeping.c
// mg_floor) that keeps a later coarse stamp, on any file system, from
// going below a fine one handed out before. A stamp from CLOCK_REALTIME
// can thus be later than the stamp of a file changed after it, and one
// from CLOCK_REALTIME_COARSE earlier than the stamp of a file changed
// before it; a stamp the kernel makes itself keeps the order of the
// changes both ways, like the kernel's own stamps of the files. So Now
// has the kernel stamp a file of the clock's own, an unlinked memfd
// (tmpfs: nanosecond granularity), and reads the stamp back.
type FileClock struct {
	fd int
}

// NewFileClock makes a FileClock; Close releases it.
func NewFileClock() (*FileClock, error) {
	fd, err := unix.MemfdCreate("txexec-file-clock", unix.MFD_CLOEXEC|unix.MFD_NOEXEC_SEAL)
	if err == unix.EINVAL {
		// Before Linux 6.3 there is no MFD_NOEXEC_SEAL (and no
		// vm.memfd_noexec that could require it).
		fd, err = unix.MemfdCreate("txexec-file-clock", unix.MFD_CLOEXEC)
	}
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	return &FileClock{fd: fd}, nil
}

// Now returns the time the kernel stamped the clock's file with:
// utimensat(fd, NULL, NULL, 0) sets its times to the current time as a
// write would (vfs_utimes, ATTR_TOUCH: no permission needed beyond the
// write access of a memfd's mode 0666 or 0777, whoever the calling
// thread's fsuid is), and fstat reads them.
//
// Concurrent calls are safe: each returns a stamp the kernel made during
// that call (a later call's stamp, if it came in between, is as good).
func (c *FileClock) Now() (unix.Timespec, error) {
	err := Retry(func() error {
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(c.fd),
			0 /* pathname: NULL, the file fd refers to */, 0 /* times: NULL, now */, 0 /* flags */, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	})
	if err != nil {
		return unix.Timespec{}, os.NewSyscallError("utimensat", err)
	}
	var st unix.Stat_t
	if err := Retry(func() error { return unix.Fstat(c.fd, &st) }); err != nil {
		return unix.Timespec{}, os.NewSyscallError("fstat", err)
	}
	return st.Mtim, nil
}

// Close releases the clock's file; Now then fails with EBADF.
func (c *FileClock) Close() error {
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}
