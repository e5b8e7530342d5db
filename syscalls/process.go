package syscalls

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
	"txexec/interpose"
	"txexec/signals"
	"txexec/vfs"
)

// Calls that reach into another process. Into a process of the
// transaction they are what they are natively; into one outside it they
// would carry the transaction's effects (or the host's descriptors) around
// the view, so they are refused with EPERM and a message naming the call
// and both pids. ptrace is refused for every target, also with a message.

func errUnknownThread(tid int) error { return fmt.Errorf("call from unknown thread %d", tid) }

// inTransaction reports whether k serves a transaction (not --passthrough).
func (k *Kernel) inTransaction() bool {
	_, isHost := k.View.(*vfs.Host)
	return !isHost
}

// member reports whether id is a thread or thread group of the session.
func (k *Kernel) member(id int) bool {
	return k.Procs.Thread(id) != nil || k.Procs.Process(id) != nil
}

// ProcessVmWritev implements process_vm_writev(2): allowed into a process
// of the transaction, refused (EPERM) into any other.
func ProcessVmWritev(k *Kernel, c *interpose.Call) interpose.Reply {
	pid := int(c.Args[0].Int())
	if !k.inTransaction() || k.PidNamespace || k.member(pid) {
		return interpose.Continue() // decided on the register alone
	}
	if _, err := (signals.ProcTasks{}).Task(pid); err != nil {
		return interpose.Fail(unix.ESRCH)
	}
	k.Logf("txexec: refused process_vm_writev of pid %d into pid %d, which is outside the transaction", c.Tid, pid)
	return interpose.Fail(unix.EPERM)
}

// Ptrace implements ptrace(2) as refused (EPERM) for every request and
// target: a tracer outside the transaction would reach its tracee's
// memory and descriptors around the view, and txexec itself traces every
// process it supervises (clone, exec), which a second tracer cannot share.
// The call is notified rather than failed in the filter only so that the
// refusal is said, naming the call and both pids: a debugger or strace
// that only reports EPERM leaves the user guessing.
func Ptrace(k *Kernel, c *interpose.Call) interpose.Reply {
	if c.Args[0].Long() == unix.PTRACE_TRACEME {
		k.Logf("txexec: refused ptrace(PTRACE_TRACEME) of pid %d: txexec is already its tracer, and nested tracing is not supported", c.Tid)
		return interpose.Fail(unix.EPERM)
	}
	pid := int(c.Args[1].Int())
	if _, err := (signals.ProcTasks{}).Task(pid); err != nil {
		return interpose.Fail(unix.ESRCH) // as ptrace_get_task_struct answers
	}
	switch {
	case k.member(pid):
		k.Logf("txexec: refused ptrace of pid %d on pid %d: txexec is already its tracer, and nested tracing is not supported", c.Tid, pid)
	case k.inTransaction():
		k.Logf("txexec: refused ptrace of pid %d on pid %d, which is outside the transaction", c.Tid, pid)
	default:
		k.Logf("txexec: refused ptrace of pid %d on pid %d: processes under txexec cannot trace, nested tracing is not supported", c.Tid, pid)
	}
	return interpose.Fail(unix.EPERM)
}

// PidfdGetfd implements pidfd_getfd(2): duplicating a descriptor of a
// process of the transaction is allowed; of any other process it is
// refused (EPERM), since its descriptors reach the host around the view.
// The call is emulated (the target is known through the caller's
// descriptor table), with the credential part of the kernel's
// PTRACE_MODE_ATTACH_REALCREDS check made for the caller.
func PidfdGetfd(k *Kernel, c *interpose.Call) interpose.Reply {
	pidfd := c.Args[0].Int()
	targetfd := c.Args[1].Int()
	flags := c.Args[2].Uint()
	if !k.inTransaction() {
		return interpose.Continue()
	}
	if flags != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	fd, err := c.GetFD(int(pidfd))
	if err != nil {
		return k.reply(c, 0, err)
	}
	defer unix.Close(fd)
	pid, _, err := pidfdTarget(fd)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if pid <= 0 {
		return interpose.Fail(unix.ESRCH)
	}
	if !k.member(pid) {
		k.Logf("txexec: refused pidfd_getfd of pid %d on pid %d, which is outside the transaction", c.Tid, pid)
		return interpose.Fail(unix.EPERM)
	}
	if err := c.Valid(); err != nil {
		return k.reply(c, 0, err)
	}
	th := k.Procs.Thread(c.Tid)
	if th == nil {
		return k.reply(c, 0, errUnknownThread(c.Tid))
	}
	cred, err := th.Cred()
	if err != nil {
		return k.reply(c, 0, err)
	}
	target, err := (signals.ProcTasks{}).Task(pid)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if !mayAttach(cred.UID, cred.GID, cred.HasCap(unix.CAP_SYS_PTRACE), target) {
		return interpose.Fail(unix.EPERM)
	}
	nfd, err := unix.PidfdGetfd(fd, int(targetfd), 0)
	if err != nil {
		return k.reply(c, 0, err)
	}
	// "The close-on-exec flag (FD_CLOEXEC) is set on the file descriptor
	// returned by pidfd_getfd()."
	return interpose.InstallFD(nfd, true)
}

// mayAttach is the credential rule of __ptrace_may_access with REALCREDS:
// the caller's real uid and gid equal the target's real, effective and
// saved ids, or the caller has CAP_SYS_PTRACE. (The dumpable and LSM checks
// are not repeated.)
func mayAttach(uid, gid uint32, capPtrace bool, t signals.Task) bool {
	if capPtrace {
		return true
	}
	return uid == t.UID && uid == t.EUID && uid == t.SUID && gid == t.GID && gid == t.EGID && gid == t.SGID
}

// pidfdTarget reads which task the supervisor's descriptor fd, a pidfd,
// refers to (/proc/self/fdinfo): its pid (-1 once reaped) and whether it is
// a thread pidfd (PIDFD_THREAD). A descriptor that is not a pidfd is EBADF,
// as pidfd_send_signal(2) and pidfd_getfd(2) answer.
func pidfdTarget(fd int) (pid int, thread bool, err error) {
	f, err := procfs.FDInfo(os.Getpid(), fd)
	if err != nil {
		return 0, false, fmt.Errorf("read fdinfo of pidfd: %w", err)
	}
	if !f.Has("Pid") {
		return 0, false, unix.EBADF
	}
	fl, err := f.Uint("flags", 8)
	if err != nil {
		return 0, false, fmt.Errorf("read fdinfo of pidfd: %w", err)
	}
	if pid, err = f.Int("Pid"); err != nil {
		return 0, false, fmt.Errorf("read fdinfo of pidfd: %w", err)
	}
	return pid, fl&unix.PIDFD_THREAD != 0, nil
}

// cloneNamespaceCases are clone's argument cases: a child in new
// namespaces (CLONE_NEW*) follows --unsupported, like unshare. The flags
// are a register, so the filter sends only those clones, and the kernel
// runs them when the policy allows (CONTINUE).
func cloneNamespaceCases() []Case {
	const note = "a child in a new mount, user or other namespace sees paths and credentials the view, resolved in the supervisor's namespaces, does not know"
	var cases []Case
	for _, f := range []struct {
		name string
		bit  uint64
	}{
		{"CLONE_NEWNS", unix.CLONE_NEWNS},
		{"CLONE_NEWUSER", unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", unix.CLONE_NEWPID},
		{"CLONE_NEWNET", unix.CLONE_NEWNET},
		{"CLONE_NEWIPC", unix.CLONE_NEWIPC},
		{"CLONE_NEWUTS", unix.CLONE_NEWUTS},
		{"CLONE_NEWCGROUP", unix.CLONE_NEWCGROUP},
	} {
		cases = append(cases, Case{Name: f.name, When: argHas(0, f.bit), Support: NoTxMeaning, Handler: unsupportedCall, Note: note})
	}
	return cases
}
