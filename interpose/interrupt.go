package interpose

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
)

// ERESTARTSYS is the kernel's answer of a wait that a signal interrupted:
// on the way back to user space the kernel restarts the call if the
// signal's handler has SA_RESTART (or if there is no handler, as after a
// stop), and turns it into EINTR otherwise. Only a reply to a caller with
// a signal pending (Interrupted) may carry it: without one, nothing
// rewrites it and the caller would see errno 512.
const ERESTARTSYS = unix.Errno(512)

// Interrupted reports whether a signal is pending for the calling thread
// that would interrupt an interruptible wait in the kernel. The filter
// makes callers wait for their reply killably
// (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), so no other signal wakes them:
// a handler that waits for long on the caller's behalf (a blocking lock)
// asks this between attempts and answers ERESTARTSYS, as the kernel's own
// wait would.
//
// A signal sent to the thread counts unless blocked. One sent to the
// process counts only when the process has this one thread: with several,
// the kernel gives it to a thread of its choice, which need not be this
// one, and a reply of ERESTARTSYS to a thread that got no signal would
// reach user space as it is.
func (c *Call) Interrupted() (bool, error) {
	f, err := procfs.Status(c.Tid, "SigPnd", "ShdPnd", "SigBlk", "Threads")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, unix.ESRCH
		}
		return false, err
	}
	var masks [3]uint64 // SigPnd, ShdPnd, SigBlk
	for i, k := range []string{"SigPnd", "ShdPnd", "SigBlk"} {
		if masks[i], err = f.Uint(k, 16); err != nil {
			return false, fmt.Errorf("/proc/%d/status: %w", c.Tid, err)
		}
	}
	threads, err := f.Int("Threads")
	if err != nil {
		return false, fmt.Errorf("/proc/%d/status: %w", c.Tid, err)
	}
	pending, shared, blocked := masks[0], masks[1], masks[2]
	if threads == 1 {
		pending |= shared
	}
	return pending&^blocked != 0, nil
}
