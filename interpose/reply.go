package interpose

import (
	"errors"

	"golang.org/x/sys/unix"
)

type replyKind uint8

const (
	replyValue replyKind = iota
	replyErrno
	replyContinue
	replyFD
	replyFDs
)

// Reply is a handler's answer to a Call: a return value, an errno, a
// descriptor to install in the caller, or (for calls decided by register
// values alone) CONTINUE.
type Reply struct {
	kind  replyKind
	val   int64
	errno unix.Errno
	// fd is a supervisor descriptor installed into the caller with ADDFD;
	// the reply closes it.
	fd      int
	cloexec bool
	// fds are the supervisor descriptors of installFDs; the reply closes
	// them.
	fds []int
}

// Return answers the call with value v.
func Return(v int64) Reply { return Reply{kind: replyValue, val: v} }

// Fail answers the call with errno e.
func Fail(e unix.Errno) Reply { return Reply{kind: replyErrno, errno: e} }

// Continue lets the kernel execute the call itself. Only for calls whose
// decision depends on register values alone; a Call whose memory was read
// refuses to send it (see Call.memRead).
func Continue() Reply { return Reply{kind: replyContinue} }

// InstallFD answers the call with a new descriptor in the caller that refers
// to the supervisor's descriptor fd (ADDFD with SEND: atomically installed
// and returned). The reply takes ownership of fd.
func InstallFD(fd int, cloexec bool) Reply { return Reply{kind: replyFD, fd: fd, cloexec: cloexec} }

// installFDs answers the call with up to two new descriptors in the caller,
// referring to the supervisor's descriptors fds, installed in order; the
// call returns their numbers, 32 bits each, the first in the low half
// (Call.sendFDs). The reply takes ownership of fds.
func installFDs(cloexec bool, fds ...int) Reply {
	if len(fds) == 0 || len(fds) > maxInstalledFDs {
		panic("interpose: installFDs takes one or two descriptors")
	}
	return Reply{kind: replyFDs, fds: fds, cloexec: cloexec}
}

// maxInstalledFDs is how many descriptor numbers fit in a call's 64-bit
// return value.
const maxInstalledFDs = 2

// missingFD stands, in installFDs' value, for a descriptor that could not
// be installed after an earlier one was: INT_MAX, which no descriptor can
// be (fs.nr_open is at most INT_MAX rounded down to a multiple of
// BITS_PER_LONG), so a call given it fails with EBADF; and with the high
// bit of its half clear, a value that holds it is not negative, not
// mistaken for an errno by code that must still close the first one.
const missingFD = 0x7fffffff

// FromError turns a handler error into a reply: a unix.Errno is returned to
// the caller as is; anything else is an internal error, reported as EIO.
func FromError(err error) Reply {
	var e unix.Errno
	if errors.As(err, &e) {
		return Fail(e)
	}
	return Fail(unix.EIO)
}

// IsErrno reports whether r fails with e.
func (r Reply) IsErrno(e unix.Errno) bool { return r.kind == replyErrno && r.errno == e }

// Result describes the reply for tracing: the value or -errno, and whether
// it was a CONTINUE.
func (r Reply) Result() (val int64, errno unix.Errno, cont bool) {
	switch r.kind {
	case replyErrno:
		return -1, r.errno, false
	case replyContinue:
		return 0, 0, true
	case replyFD:
		return int64(r.fd), 0, false
	case replyFDs:
		return 0, 0, false // the numbers are known once sent
	}
	return r.val, 0, false
}

// IsFD reports whether the reply installs a descriptor (or two: the
// value the caller saw then holds both).
func (r Reply) IsFD() bool { return r.kind == replyFD || r.kind == replyFDs }

// send delivers the reply for c. It returns the value the caller sees (the
// installed descriptor number for InstallFD). A failed send means the caller
// was interrupted by a fatal signal or killed: it is dying and the result is
// lost, which the caller of send reports.
func (c *Call) send(r Reply) (int64, error) {
	fd := c.listener.fd
	switch r.kind {
	case replyFDs:
		return c.sendFDs(r)
	case replyFD:
		defer unix.Close(r.fd)
		var flags uint32
		if r.cloexec {
			flags = unix.O_CLOEXEC
		}
		a := seccompNotifAddfd{ID: c.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(r.fd), NewfdFlags: flags}
		h := c.handoff
		if h != nil && h.on && !handoffSafe(r.fd) { // its two system calls only where a hand-off could follow
			h = nil
		}
		n, err := notifAddfdSend(fd, &a, c.listener.cfg.Profiled, h)
		if err != nil {
			// EMFILE etc. must still reach the caller; ENOENT means it is gone.
			if errno, ok := err.(unix.Errno); ok && errno != unix.ENOENT {
				return -1, notifSend(fd, &seccompNotifResp{ID: c.ID, Error: -int32(errno)})
			}
			return -1, err
		}
		return int64(n), nil
	case replyContinue:
		if c.memRead {
			// Enforced, not remembered: see Call.memRead.
			return -1, notifSend(fd, &seccompNotifResp{ID: c.ID, Error: -int32(unix.EIO)})
		}
		return 0, notifSend(fd, &seccompNotifResp{ID: c.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE})
	case replyErrno:
		return -1, notifSend(fd, &seccompNotifResp{ID: c.ID, Error: -int32(r.errno)})
	}
	return r.val, notifSend(fd, &seccompNotifResp{ID: c.ID, Val: r.val})
}

// sendFDs delivers an installFDs reply: one ADDFD without SEND per
// descriptor, each waiting for the caller to install it (the call stays
// pending), then the value. Between them the caller can only be killed, not
// interrupted: the filter is loaded with WAIT_KILLABLE_RECV (filter.go), so
// once a worker has received the call no other signal ends its wait
// (kernel/seccomp.c seccomp_do_user_notification, should_sleep_killable),
// and no descriptor is installed into a call that is then restarted. If the
// first cannot be installed the call fails with its errno (ENOENT, the
// caller gone, is returned as the error); a later one that cannot reads as
// missingFD.
func (c *Call) sendFDs(r Reply) (int64, error) {
	fd := c.listener.fd
	defer func() {
		for _, f := range r.fds {
			unix.Close(f)
		}
	}()
	var flags uint32
	if r.cloexec {
		flags = unix.O_CLOEXEC
	}
	var val int64
	for i, src := range r.fds {
		a := seccompNotifAddfd{ID: c.ID, Srcfd: uint32(src), NewfdFlags: flags}
		n, err := notifAddfdSend(fd, &a, c.listener.cfg.Profiled, nil)
		if err != nil {
			errno, ok := err.(unix.Errno)
			if !ok || errno == unix.ENOENT {
				return -1, err
			}
			if i == 0 {
				return -1, notifSend(fd, &seccompNotifResp{ID: c.ID, Error: -int32(errno)})
			}
			for j := i; j < len(r.fds); j++ {
				val |= missingFD << (32 * j)
			}
			break
		}
		val |= int64(n) << (32 * i)
	}
	return val, notifSend(fd, &seccompNotifResp{ID: c.ID, Val: val})
}

// handoffSafe says whether a descriptor reply of fd may hand the CPU to
// the caller (idleHandoff), which runs the caller before the worker closes
// its own copy of fd: only for a read-only regular file or directory. A
// writable copy left open makes an exec of the file fail with ETXTBSY
// (cp then exec of the copy: seen in TestParity); a pipe's, socket's or
// device's copy left open changes what the other end sees.
func handoffSafe(fd int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_ACCMODE != unix.O_RDONLY {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG || st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// notifAddfdSend is ADDFD with SECCOMP_ADDFD_FLAG_SEND. It must be made on
// a worker thread, whose signal mask (workerSignals) lets no signal but
// workerWake through.
//
// The kernel (seen on 6.18, kernel/seccomp.c seccomp_notify_addfd) marks the
// notification REPLIED as soon as a SEND request is queued, then waits
// interruptibly for the caller to take the descriptor. If a signal (Go's
// SIGURG, SIGCHLD from the traced tree) interrupts that wait before the
// caller has run, the request is dequeued but the state stays REPLIED: the
// caller's system call returns 0 with no descriptor installed (open(2)
// "returns" stdin), and the restarted ioctl fails with EINPROGRESS. Blocked
// signals cannot interrupt the wait; the tracee side always completes it,
// also when the tracee dies (-ESRCH). workerWake is sent only once the
// whole traced tree has exited (listener.stop), when no ADDFD can be waiting
// for a live caller. While profiling, workers let SIGPROF through, so
// every signal is blocked around the wait itself (maskAll).
//
// h, if not nil, is the worker's hand-off of the CPU to the caller
// (idleHandoff); only a SEND takes it, where the caller's wake-up ends
// the call.
func notifAddfdSend(fd int, a *seccompNotifAddfd, maskAll bool, h *idleHandoff) (int, error) {
	if !maskAll {
		return h.addfd(fd, a)
	}
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		return -1, err
	}
	n, err := h.addfd(fd, a)
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil); err != nil {
		panic("txexec: restore signal mask: " + err.Error())
	}
	return n, err
}

// workerWake is the signal that interrupts a worker blocked in NOTIF_RECV
// when the listener stops: a real-time signal that neither Go's runtime
// (which ignores real-time signals nobody asked for with os/signal) nor
// glibc (32–34) uses. Go's own SIGURG cannot serve: the runtime sends it
// at any time to preempt, and it must not interrupt an ADDFD wait.
const workerWake = unix.Signal(40)

// workerSignals blocks, on the calling locked worker thread, every signal
// but workerWake (and SIGPROF if profiled), once for the worker's life
// instead of around each ADDFD (two rt_sigprocmask calls per descriptor
// reply, 7% of the supervisor's CPU under dpkg). It returns the function
// that restores the old mask, to be called before the thread is unlocked.
//
// The signals of faults stay open: the kernel forces a fault's signal
// through a mask by resetting its handler to the default, which would
// kill txexec where Go turns a nil dereference in a handler into a panic
// that the listener recovers (an EIO for that call). They only arise from
// the worker's own code, never while it waits in an ioctl.
func workerSignals(profiled bool) (restore func(), err error) {
	var mask, old unix.Sigset_t
	for i := range mask.Val {
		mask.Val[i] = ^uint64(0)
	}
	pass := []unix.Signal{workerWake, unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP}
	if profiled {
		pass = append(pass, unix.SIGPROF)
	}
	for _, sig := range pass {
		w := uint(sig) - 1
		mask.Val[w/64] &^= 1 << (w % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &mask, &old); err != nil {
		return nil, err
	}
	return func() {
		if err := unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil); err != nil {
			panic("txexec: restore signal mask: " + err.Error())
		}
	}, nil
}

var errContinueAfterRead = errors.New("CONTINUE refused: the handler read tracee memory")

// ReplaceFD makes the caller's descriptor number target refer to the
// supervisor's descriptor fd (its open file description), in place of
// what it referred to, as dup2 would: ADDFD with SETFD and without SEND,
// which the caller carries out atomically in its own descriptor table
// (other threads sharing it see the old or the new description, never no
// descriptor), and which leaves the call pending, for the handler to
// answer. fd stays the supervisor's. ENOENT: the caller has gone.
func (c *Call) ReplaceFD(fd, target int, cloexec bool) error {
	var flags uint32
	if cloexec {
		flags = unix.O_CLOEXEC
	}
	a := seccompNotifAddfd{ID: c.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SETFD, Srcfd: uint32(fd), Newfd: uint32(target), NewfdFlags: flags}
	// The same wait as a SEND (see notifAddfdSend): for the caller to
	// take the descriptor, uninterrupted.
	_, err := notifAddfdSend(c.listener.fd, &a, c.listener.cfg.Profiled, nil)
	return err
}
