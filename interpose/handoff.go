package interpose

/*
#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

// struct sched_attr as far as SCHED_ATTR_SIZE_VER0 (linux/sched/types.h).
struct txexec_sched_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

#define TXEXEC_SCHED_NORMAL 0
#define TXEXEC_SCHED_IDLE 5

// txexec_addfd_idle makes the ADDFD ioctl (fd, req, arg) with the calling
// thread in the SCHED_IDLE class, and puts it back in SCHED_NORMAL with its
// nice value before returning: the three system calls in one C function,
// which the Go runtime counts as one system call, so that no Go code runs
// on the thread while it is SCHED_IDLE. It returns the ioctl's result or
// -errno, and sets *restore_err to the errno of a failed return to
// SCHED_NORMAL (the thread is then still SCHED_IDLE).
static long txexec_addfd_idle(int fd, unsigned long req, void *arg, int32_t nice, uint64_t flags, int *restore_err) {
	struct txexec_sched_attr a = {.size = sizeof a, .policy = TXEXEC_SCHED_IDLE, .flags = flags, .nice = nice};
	int idle = syscall(SYS_sched_setattr, 0, &a, 0) == 0;
	long r = syscall(SYS_ioctl, fd, req, arg);
	if (r < 0)
		r = -errno;
	*restore_err = 0;
	if (idle) {
		a.policy = TXEXEC_SCHED_NORMAL;
		if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
			*restore_err = errno;
	}
	return r;
}

// txexec_idle_probe puts the calling thread in SCHED_IDLE and back in
// SCHED_NORMAL (nice, flags kept), as txexec_addfd_idle does: 0 if both
// worked; else the errno, and *stuck set if the thread is left SCHED_IDLE.
static int txexec_idle_probe(int32_t nice, uint64_t flags, int *stuck) {
	struct txexec_sched_attr a = {.size = sizeof a, .policy = TXEXEC_SCHED_IDLE, .flags = flags, .nice = nice};
	*stuck = 0;
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
		return errno;
	a.policy = TXEXEC_SCHED_NORMAL;
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0) {
		*stuck = 1;
		return errno;
	}
	return 0;
}
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// idleHandoff is a worker thread's way of making a descriptor reply hand
// the CPU straight to the caller, as a normal reply does.
//
// A normal reply (SEND with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) wakes the
// caller on the worker's CPU, and the worker then sleeps in RECV: a direct
// hand-off. ADDFD (kernel/seccomp.c seccomp_notify_addfd, seen on 6.18)
// wakes the caller with a plain complete(), and the scheduler's
// select_idle_sibling puts it on another, idle CPU if there is one: on a
// virtual machine, an interrupt to a halted vCPU. But select_idle_sibling
// keeps the wake-up on the target CPU (the caller's last, which after a
// SYNC_WAKE_UP wake is the worker's) if the only task running there is
// SCHED_IDLE (sched_idle_cpu), and a SCHED_NORMAL task woken there
// preempts it at its next scheduling point. So the worker makes the ADDFD
// as a SCHED_IDLE thread and goes back to SCHED_NORMAL (its nice kept) as
// soon as the ioctl returns.
//
// Starvation: a SCHED_IDLE thread runnable on a CPU that a normal task
// holds gets almost none of it. The three system calls are one C function
// (addfdIdle), which the Go runtime treats as one system call: no Go code
// runs on the thread while it is SCHED_IDLE, so it never holds a runtime
// lock or a P in that state (the P of a thread in a system call is the
// runtime's to retake). In the kernel, ADDFD releases the listener's
// notify_lock before it waits (so a starved worker holds no lock another
// worker or the caller needs) and, with the kernel built without
// preemption of kernel code (PREEMPT_NONE, this machine's), is not
// preempted by the woken caller before it does. What a starved worker
// delays is only its own return: the next call of the tree waits for
// another receiver (listener.watch adds one).
type idleHandoff struct {
	on    bool
	nice  int32
	flags uint64
	// stuck: a reply could not put the thread back in SCHED_NORMAL (it
	// cannot happen while the supervisor keeps its capabilities); the
	// worker ends and its thread with it.
	stuck error
}

// addfd makes the ADDFD a, with the hand-off if h is on.
func (h *idleHandoff) addfd(fd int, a *seccompNotifAddfd) (int, error) {
	if h == nil || !h.on {
		return notifAddfd(fd, a)
	}
	n, err, restoreErr := addfdIdle(fd, a, h)
	if restoreErr != nil {
		h.on, h.stuck = false, restoreErr
	}
	return n, err
}

// newIdleHandoff probes, on the calling locked worker thread, whether it
// can make the hand-off: only a SCHED_NORMAL thread does (a thread left
// SCHED_BATCH by a failed sysx.UnbatchThread stays as it is), and only if
// it may come back from SCHED_IDLE (mayLeaveIdle; the supervisor's
// capabilities are the same at every reply: AsCaller restores them after
// each handler), which the probe then tries. An unprivileged txexec
// makes plain ADDFDs. stuck: the probe left the thread SCHED_IDLE all the
// same (root in a user namespace holds CAP_SYS_NICE there, not where the
// scheduler checks it), and the caller must let it end with its goroutine.
func newIdleHandoff() (h idleHandoff, stuck bool, err error) {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil || attr.Policy != unix.SCHED_NORMAL {
		return h, false, err
	}
	h.nice = attr.Nice
	if !mayLeaveIdle(h.nice) {
		return h, false, nil
	}
	// Only reset-on-fork is kept (as sysx.setFairPolicy does): without the
	// flags that ask for them, the utilisation clamps are left as they are.
	h.flags = attr.Flags & unix.SCHED_FLAG_RESET_ON_FORK
	if err, stuck := idleProbe(&h); err != nil {
		return idleHandoff{}, stuck, err
	}
	h.on = true
	return h, false, nil
}

// addfdIdle is ADDFD made with the calling thread in SCHED_IDLE for the
// length of the ioctl (see idleHandoff), keeping h's nice value and flags. restoreErr is non-nil if the thread could not be put back in
// SCHED_NORMAL: it is still SCHED_IDLE and must not run Go code that
// could hold a lock or a P for long.
func addfdIdle(fd int, a *seccompNotifAddfd, h *idleHandoff) (n int, err, restoreErr error) {
	var rerr C.int
	r := C.txexec_addfd_idle(C.int(fd), C.ulong(unix.SECCOMP_IOCTL_NOTIF_ADDFD), unsafe.Pointer(a), C.int32_t(h.nice), C.uint64_t(h.flags), &rerr)
	if rerr != 0 {
		restoreErr = unix.Errno(rerr)
	}
	if r < 0 {
		return -1, unix.Errno(-r), restoreErr
	}
	return int(r), nil, restoreErr
}

// idleProbe puts the calling thread in SCHED_IDLE and back, keeping h's
// nice value and flags. stuck: it is left SCHED_IDLE.
func idleProbe(h *idleHandoff) (err error, stuck bool) {
	var st C.int
	if e := C.txexec_idle_probe(C.int32_t(h.nice), C.uint64_t(h.flags), &st); e != 0 {
		return unix.Errno(e), st != 0
	}
	return nil, false
}

// mayLeaveIdle reports whether the calling thread, at nice value nice, may
// leave SCHED_IDLE: the kernel lets it if RLIMIT_NICE allows that nice
// value (20 - nice, can_nice in kernel/sched/syscalls.c) or if it has
// CAP_SYS_NICE. Without either, a thread can enter SCHED_IDLE and never
// leave it.
func mayLeaveIdle(nice int32) bool {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NICE, &lim); err == nil && lim.Cur >= uint64(20-nice) {
		return true
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_NICE/32].Effective&(1<<(unix.CAP_SYS_NICE%32)) != 0
}
