package syscalls

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"txexec/determ"
	"txexec/hostlock"
	"txexec/interpose"
	"txexec/proc"
	"txexec/signals"
	"txexec/vfs"
)

// Kernel is what every handler is given: the table and the subsystems that
// act on behalf of the caller.
type Kernel struct {
	Table *Table
	Procs *proc.Table
	View  vfs.View
	// Logf reports internal errors and refused calls (never nil).
	Logf func(format string, args ...any)
	// Trace, if set, receives one line per intercepted call.
	Trace *Tracer
	// Unsupported is the --unsupported policy.
	Unsupported Policy
	// UnsupportedBy names what set Unsupported in messages, when it is not
	// --unsupported (xbegin's TX_ERROR_UNSUPPORTED).
	UnsupportedBy string
	// OnInternalError is called when a handler fails in a way that is not
	// an errno (the transaction must abort).
	OnInternalError func(err error)
	// Signals routes the signals the transaction's processes send (nil
	// outside a transaction: the kernel delivers them).
	Signals *signals.Router
	// HostLocks holds the transaction's advisory locks on host originals
	// (nil outside a transaction: the kernel runs flock and fcntl).
	HostLocks *hostlock.Table
	// TreeLocks holds the tree's locks through descriptions that stay on
	// unchanged host originals (nil: they have only the transaction's).
	TreeLocks *TreeLocks
	// HostLockWatch, if set, is told when the transaction takes host
	// locks and when it waits long for one (txexec parallel's commands;
	// nil: nobody is).
	HostLockWatch HostLockWatch
	// Programs serves the transactions programs begin themselves (nil:
	// the xbegin family answers ENOSYS).
	Programs *Programs
	// ExecLinks names programs for the kernel as they were executed (nil:
	// by their host paths, so a program run through a symlink or a script
	// gets the name of the file it resolves to).
	ExecLinks *ExecLinks
	// Determ is the deterministic environment of a --deterministic run
	// (nil otherwise), whose calls the table then routes to the
	// supervisor (WithDeterminism).
	Determ *determ.Env
	// PidNamespace says the tree runs in a pid namespace of its own,
	// which holds none but the transaction's processes: a pid a process
	// names is of its namespace, and only reaches the tree.
	PidNamespace bool
	// AgentOff, when set, is called after a chroot of thread tid, or its
	// xbegin of a transaction of its own: the fast-lookup agent of its
	// process (interpose.FastLookups) must forward every lookup from then
	// on, since its lookups are no longer the kernel's.
	AgentOff func(tid int)
	// AgentCwds, when set, publishes to the fast-lookup agents the
	// working directories of their processes.
	AgentCwds *AgentCwds
	// FastRings, when set, are the rings of the fast-lookup agents of a
	// transaction's processes, drained before every call is served.
	FastRings *FastRings
}

// Policy is what happens to a call without transactional meaning.
type Policy uint8

const (
	// PolicyAbort aborts the transaction (TxOS's default).
	PolicyAbort Policy = iota
	// PolicyError fails the call (ENOTSUP, TxOS's ENOTXSUPPORT).
	PolicyError
	// PolicyAllow runs it anyway, with a warning.
	PolicyAllow
)

// Handle implements interpose.Handler: dispatch by number.
func (k *Kernel) Handle(c *interpose.Call) interpose.Reply {
	if k.FastRings != nil {
		k.FastRings.Drain()
	}
	k, err := k.serving(c.Tid)
	if err != nil {
		return interpose.Fail(err.(unix.Errno))
	}
	e := k.Table.Lookup(c.Nr)
	if e == nil {
		return interpose.Fail(unix.ENOSYS)
	}
	h := e.HandlerFor(c.Args)
	if h == nil {
		// The filter sends only calls whose entry or case has a handler.
		return interpose.Fail(unix.ENOSYS)
	}
	if k.Trace != nil {
		k.Trace.before(e, c)
	}
	return h(k, c)
}

// caller samples the calling thread's credentials and file-system context.
// The returned func releases the handles.
func (k *Kernel) caller(c *interpose.Call) (*vfs.Caller, func(), error) {
	t := k.Procs.Thread(c.Tid)
	if t == nil {
		return nil, nil, fmt.Errorf("call from unknown thread %d", c.Tid)
	}
	cred, err := t.Cred()
	if err != nil {
		return nil, nil, err
	}
	cwd, root, umask := t.FS().Get()
	cl := &vfs.Caller{Tid: c.Tid, Tgid: t.Proc.Tgid, Cred: cred, Cwd: cwd.(*vfs.Handle), Root: root.(*vfs.Handle), Umask: umask,
		Call: c}
	return cl, func() { cwd.Release(); root.Release() }, nil
}

// at returns the handle relative paths start from: the caller's cwd for
// AT_FDCWD, else the directory (or, with AT_EMPTY_PATH, any file) the
// descriptor refers to. Linux ignores dirfd for absolute paths.
func (k *Kernel) at(c *interpose.Call, cl *vfs.Caller, dirfd int32, path string) (*vfs.Handle, func(), error) {
	return k.atWalk(c, cl, dirfd, strings.HasPrefix(path, "/"))
}

// atWalk is at, where ignoreDirfd says the walk does not start at dirfd.
func (k *Kernel) atWalk(c *interpose.Call, cl *vfs.Caller, dirfd int32, ignoreDirfd bool) (*vfs.Handle, func(), error) {
	if dirfd == unix.AT_FDCWD || ignoreDirfd {
		return cl.Cwd, func() {}, nil
	}
	if dirfd < 0 {
		return nil, nil, unix.EBADF
	}
	fd, err := c.GetFD(int(dirfd))
	if err != nil {
		return nil, nil, err
	}
	h, err := k.View.HandleOf(cl, fd)
	if err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	return h, h.Release, nil
}

// reply turns a handler's result into a reply. An error that is not an
// errno is internal: it is logged with the call, answered EIO, and reported
// so the transaction aborts.
func (k *Kernel) reply(c *interpose.Call, val int64, err error) interpose.Reply {
	if err == nil {
		return interpose.Return(val)
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return interpose.Fail(e)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		if errors.As(pe.Err, &e) {
			return interpose.Fail(e)
		}
	}
	name := k.callName(c)
	var un *vfs.Unsupported
	if errors.As(err, &un) {
		return k.refuse(c, &UnsupportedError{Call: name, Pid: c.Tid, Detail: un.Error()}, false)
	}
	k.Logf("txexec: internal error in %s of pid %d: %v", name, c.Tid, err)
	if k.OnInternalError != nil {
		k.OnInternalError(fmt.Errorf("%s of pid %d: %w", name, c.Tid, err))
	}
	return interpose.Fail(unix.EIO)
}

// pathCall is the common frame of a call that takes (dirfd, path): decode
// is done by the caller; this copies the path in, checks the notification
// is still valid, and runs fn with the caller and the starting handle.
func (k *Kernel) pathCall(c *interpose.Call, dirfd int32, pathAddr uintptr, fn func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error)) interpose.Reply {
	path, err := c.ReadPath(pathAddr)
	if err != nil {
		return k.reply(c, 0, err)
	}
	return k.resolvedCall(c, dirfd, path, fn)
}

func (k *Kernel) resolvedCall(c *interpose.Call, dirfd int32, path string, fn func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error)) interpose.Reply {
	cl, at, leave, err := k.enter(c, dirfd, path)
	if err != nil {
		return k.reply(c, 0, err)
	}
	defer leave()
	v, err := fn(cl, at, path)
	return k.reply(c, v, err)
}

// enter is the part of every call after copy-in: check that the
// notification is still valid (the pid may otherwise have been recycled),
// sample the caller, and find the handle relative paths start from.
func (k *Kernel) enter(c *interpose.Call, dirfd int32, path string) (*vfs.Caller, *vfs.Handle, func(), error) {
	return k.enterWalk(c, dirfd, strings.HasPrefix(path, "/"))
}

// enterScoped is enter for openat2's RESOLVE_BENEATH and RESOLVE_IN_ROOT
// walks, which start at dirfd even for an absolute path.
func (k *Kernel) enterScoped(c *interpose.Call, dirfd int32, _ string) (*vfs.Caller, *vfs.Handle, func(), error) {
	return k.enterWalk(c, dirfd, false)
}

func (k *Kernel) enterWalk(c *interpose.Call, dirfd int32, ignoreDirfd bool) (*vfs.Caller, *vfs.Handle, func(), error) {
	if err := c.Valid(); err != nil {
		return nil, nil, nil, err
	}
	cl, release, err := k.caller(c)
	if err != nil {
		return nil, nil, nil, err
	}
	if dirfd == unix.AT_FDCWD || ignoreDirfd {
		return cl, cl.Cwd, release, nil // as k.atWalk, without a closure
	}
	at, done, err := k.atWalk(c, cl, dirfd, ignoreDirfd)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return cl, at, func() { done(); release() }, nil
}

// fdCall runs fn on the handle of descriptor fd (the f* calls).
func (k *Kernel) fdCall(c *interpose.Call, fd int32, fn func(cl *vfs.Caller, h *vfs.Handle) (int64, error)) interpose.Reply {
	if fd < 0 {
		return interpose.Fail(unix.EBADF)
	}
	return k.resolvedCall(c, fd, "", func(cl *vfs.Caller, h *vfs.Handle, _ string) (int64, error) { return fn(cl, h) })
}

// unsupportedCall serves NoTxMeaning entries according to --unsupported.
func unsupportedCall(k *Kernel, c *interpose.Call) interpose.Reply {
	if _, isHost := k.View.(*vfs.Host); isHost {
		// Outside a transaction there is nothing to protect.
		return interpose.Continue()
	}
	return k.refuse(c, &UnsupportedError{Call: k.callName(c), Pid: c.Tid}, true)
}

// callName names a call in messages: its entry's name, with the argument
// case it matches ("ioctl(FS_IOC_SETFLAGS)", "clone(CLONE_NEWNS)").
func (k *Kernel) callName(c *interpose.Call) string {
	e := k.Table.Lookup(c.Nr)
	if e == nil {
		return fmt.Sprintf("syscall %d", c.Nr)
	}
	if cs := e.CaseOf(c.Args); cs != nil {
		return e.Name + "(" + cs.Name + ")"
	}
	return e.Name
}

// refuse answers a call the transaction cannot carry out, as --unsupported
// says: run it anyway (allow; only a call that canRun natively, else it
// fails as under error), fail it with ENOTSUP (error), or fail it and
// abort the transaction (abort). Every policy names the call and its pid:
// allow and error in a line at once, abort in the abort message.
func (k *Kernel) refuse(c *interpose.Call, e *UnsupportedError, canRun bool) interpose.Reply {
	switch k.Unsupported {
	case PolicyAllow:
		if canRun {
			k.Logf("txexec: warning: %s; running it anyway (--unsupported=allow)", e.what())
			return interpose.Continue()
		}
		k.Logf("txexec: warning: %s; it fails with ENOTSUP (--unsupported=allow cannot run it)", e.what())
		return interpose.Fail(unix.ENOTSUP)
	case PolicyError:
		// Said, as under the other policies: a program that only
		// reports "Operation not supported" does not say which call.
		by := "--unsupported=error"
		if k.UnsupportedBy != "" {
			by = k.UnsupportedBy
		}
		k.Logf("txexec: %s; it fails with ENOTSUP (%s)", e.what(), by)
		return interpose.Fail(unix.ENOTSUP)
	}
	if k.OnInternalError != nil {
		k.OnInternalError(e)
	}
	return interpose.Fail(unix.ENOTSUP)
}

// UnsupportedError aborts a transaction under --unsupported=abort.
type UnsupportedError struct {
	Call string
	Pid  int
	// Detail says what the call would have done that the transaction
	// cannot; empty for a call that has no transactional meaning at all.
	Detail string
}

func (e *UnsupportedError) what() string {
	if e.Detail != "" {
		return fmt.Sprintf("pid %d called %s: %s", e.Pid, e.Call, e.Detail)
	}
	return fmt.Sprintf("pid %d called %s, which has no transactional meaning", e.Pid, e.Call)
}

func (e *UnsupportedError) Error() string { return e.what() + " (see --unsupported)" }
