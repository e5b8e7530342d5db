package interpose

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// saNoCldStop is SA_NOCLDSTOP, sigIgn SIG_IGN.
const (
	saNoCldStop = 1
	sigIgn      = 1
)

var quietStopsOnce sync.Once

// quietStops adds SA_NOCLDSTOP to the supervisor's own SIGCHLD action,
// keeping the Go runtime's handler. Every ptrace stop of a tracee
// otherwise sends the tracer's process a SIGCHLD (kernel/signal.c
// do_notify_parent_cldstop, whose wake-up of wait4 does not depend on
// it): about seven per fork and exec under --fast-lookups, each run by
// whichever of the supervisor's threads the kernel picks, often one asleep
// in the Go scheduler, woken only for the handler. The tracer learns of
// every stop from wait4 alone; a child's exit still sends SIGCHLD.
//
// Process-wide: the runtime sets SIGCHLD's action again only for
// os/signal's Notify, Ignore or Reset of SIGCHLD, which txexec never asks
// for.
func quietStops() error {
	var err error
	quietStopsOnce.Do(func() {
		var act kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0,
			uintptr(unsafe.Pointer(&act)), unsafe.Sizeof(act.mask), 0, 0); e != 0 {
			err = os.NewSyscallError("rt_sigaction", e)
			return
		}
		if act.handler == sigDfl || act.handler == sigIgn || act.flags&saNoCldStop != 0 {
			return // no handler to spare the wake-ups of, or done
		}
		act.flags |= saNoCldStop
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD),
			uintptr(unsafe.Pointer(&act)), 0, unsafe.Sizeof(act.mask), 0, 0); e != 0 {
			err = os.NewSyscallError("rt_sigaction", e)
		}
	})
	return err
}
