package interpose

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// kcmp's types (linux/kcmp.h).
const (
	kcmpFile  = 0
	kcmpFiles = 2
)

// kcmp compares the kernel objects idx1 of task pid1 and idx2 of task
// pid2 (kcmp(2)): 0 when they are the same.
func kcmp(pid1, pid2, typ, idx1, idx2 int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(pid1), uintptr(pid2), uintptr(typ), uintptr(idx1), uintptr(idx2), 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// DescriptionShared reports whether the open file description of
// descriptor fd of thread tid is also referred to by another descriptor:
// another number in tid's own descriptor table, or any descriptor of the
// processes pids (tid's own process among them, or not). Processes and
// descriptors that go away meanwhile are passed over. A description is
// compared by identity (kcmp), not by what it is open on.
func DescriptionShared(tid, fd int, pids []int) (bool, error) {
	for _, pid := range pids {
		// A process sharing tid's descriptor table (a thread of it, or
		// a CLONE_FILES child) has fd itself at the same number.
		same, err := kcmp(tid, pid, kcmpFiles, 0, 0)
		if err == unix.ESRCH {
			continue
		}
		if err != nil {
			return false, err
		}
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		if err != nil {
			continue // gone, or a zombie
		}
		for _, e := range ents {
			n, err := strconv.Atoi(e.Name())
			if err != nil || same == 0 && n == fd {
				continue
			}
			switch r, err := kcmp(tid, pid, kcmpFile, fd, n); {
			case err == unix.EBADF || err == unix.ESRCH:
				// fd of tid is EBADF only if it was closed meanwhile;
				// n of pid, likewise.
			case err != nil:
				return false, err
			case r == 0:
				return true, nil
			}
		}
	}
	return false, nil
}

// SameDescription reports whether descriptor fd of thread tid still
// refers to the open file description of the supervisor's descriptor own.
func SameDescription(tid, fd, own int) (bool, error) {
	r, err := kcmp(tid, os.Getpid(), kcmpFile, fd, own)
	switch {
	case err == unix.EBADF:
		return false, nil
	case err != nil:
		return false, err
	}
	return r == 0, nil
}

// DescriptionHeld reports whether a descriptor of one of the processes
// pids refers to the open file description of the supervisor's descriptor
// own: whether, but for the supervisor's reference, the description would
// still be open. Processes that go away meanwhile are passed over; a
// mapping of the description, or a reference held outside pids (sent over
// a Unix socket), does not count.
func DescriptionHeld(own int, pids []int) (bool, error) {
	self := os.Getpid()
	for _, pid := range pids {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		if err != nil {
			continue // gone, or a zombie
		}
		for _, e := range ents {
			n, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			switch r, err := kcmp(self, pid, kcmpFile, own, n); {
			case err == unix.EBADF || err == unix.ESRCH:
				// Closed, or the process gone, meanwhile.
			case err != nil:
				return false, err
			case r == 0:
				return true, nil
			}
		}
	}
	return false, nil
}

// SameOwnDescription reports whether the supervisor's descriptors a and b
// refer to one open file description.
func SameOwnDescription(a, b int) (bool, error) {
	self := os.Getpid()
	r, err := kcmp(self, self, kcmpFile, a, b)
	if err != nil {
		return false, err
	}
	return r == 0, nil
}
