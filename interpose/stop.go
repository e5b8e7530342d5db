package interpose

import (
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction is the kernel's struct sigaction for rt_sigaction(2) on
// x86-64 (the layout the Go runtime itself installs).
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sigDfl is SIG_DFL.
const sigDfl = 0

// StopAs stops the calling process the way its command stopped, with sig
// (SIGTSTP, SIGTTIN, SIGTTOU or SIGSTOP), and returns once it is continued.
// A shell then reports the supervisor's job exactly as it would the command
// ("Stopped" for SIGTSTP, "Stopped (signal)" for SIGSTOP, $? = 128+N).
//
// The supervisor catches the stop signals (it must outlive the command's
// stop, see Config.OnStop), and a Go program cannot give one back its
// default action: os/signal.Reset keeps the runtime's handler installed.
// So the default action is set with a raw rt_sigaction for the moment, the
// signal is sent to this very thread, which takes it on its way out of
// tgkill(2) (the whole process stops there), and the previous action is put
// back once the process has been continued.
func StopAs(sig unix.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if sig == unix.SIGSTOP {
		unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
		return
	}
	var dfl, old kernelSigaction
	dfl.handler = sigDfl
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), uintptr(unsafe.Pointer(&old)), unsafe.Sizeof(dfl.mask), 0, 0); e != 0 {
		unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGSTOP)
		return
	}
	unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&old)), 0, unsafe.Sizeof(old.mask), 0, 0)
}
