package interpose

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
)

// FileID identifies a file by device and inode.
type FileID struct{ Dev, Ino uint64 }

// ExecRequest is an execve or execveat stopped by the filter (ActTrace) before
// the kernel reads its arguments. The handler resolves the path in the
// caller's view and returns the host file the kernel must execute.
type ExecRequest struct {
	Tid      int
	Nr       int // unix.SYS_EXECVE or unix.SYS_EXECVEAT
	Dirfd    int32
	PathAddr uintptr
	ArgvAddr uintptr
	EnvpAddr uintptr
	Flags    int32
	Memory
}

// ExecPlan is how to run an exec request.
type ExecPlan struct {
	// Errno, when set, fails the call without running it.
	Errno unix.Errno
	// Path is the absolute host path the kernel is given: the program's
	// own, or another name that leads to it (the kernel names the new image
	// after its last component).
	Path string
	// Program is the host path of the program, for messages (Path if
	// empty).
	Program string
	// ArgvPrefix, when set, replaces argv[0] (interpreter scripts: the
	// interpreter, its optional argument and the script's name as given).
	ArgvPrefix []string
	// Expect is the executable the new image must come from. It is checked
	// at PTRACE_EVENT_EXEC; a mismatch (another thread rewrote the path
	// between our check and the kernel's read) kills the process.
	Expect FileID
	// Cleanup, when set, is called once the kernel no longer needs Path:
	// at PTRACE_EVENT_EXEC, or when the thread plans another exec (this one
	// failed) or exits.
	Cleanup func()
}

// ProcessEvents receives the process-tree events. It is called on the
// tracer's thread while the threads concerned are stopped.
type ProcessEvents interface {
	// Clone reports that parent created child. flags are the clone flags
	// (SIGCHLD for fork, CLONE_VM|CLONE_VFORK|SIGCHLD for vfork). The child
	// has not run yet.
	Clone(parent, child int, flags uint64)
	// Exec plans an execve/execveat.
	Exec(req *ExecRequest) ExecPlan
	// Execed reports that thread group tgid now runs a new image; formerTid
	// is the thread that called execve (its id is gone if it differs).
	Execed(tgid, formerTid int)
	// Exited reports that thread tid has ended.
	Exited(tid int, ws unix.WaitStatus)
}

const ptraceOptions = unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC |
	unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_EXITKILL

// __WNOTHREAD: wait only for this thread's children and tracees, so that
// several sessions in one process (tests) never see each other's events.
const waitNoThread = 0x20000000

// tracer owns every ptrace operation; it runs on one locked OS thread, since
// ptrace requests must come from the thread that attached.
type tracer struct {
	events ProcessEvents
	logf   func(string, ...any)

	mu sync.Mutex
	// live holds every traced thread that has not exited.
	// +checklocks:mu
	live map[int]bool
	// sharedVM holds the processes (by thread-group id) whose address
	// space another process may be running in (clone with CLONE_VM but
	// without CLONE_THREAD): their call sites are not rewritten.
	// +checklocks:mu
	sharedVM map[int]bool
	// noRewrite holds the threads whose call sites are not rewritten
	// until their next image: their image has no agent, or their process
	// has other threads or shares its address space. It saves the
	// rewriter reading /proc for every lookup they make.
	// +checklocks:mu
	noRewrite map[int]bool
	// sole holds the threads the rewriter found to be their process's
	// only one, with the count of threads created (threads) then: while
	// no thread has been created since, it still is — a new thread of
	// the process could only come from its clone, whose event the tracer
	// counts before the caller goes on — and /proc need not be read again.
	// +checklocks:mu
	sole map[int]uint64
	// goImages remembers which executables are Go programs (goImage);
	// the tracer's thread alone uses it.
	goImages map[exeVersion]bool

	// cmd is the command's pid; onStop is called when it enters a
	// group-stop (after it has been left stopped with PTRACE_LISTEN).
	cmd    int
	onStop func(sig unix.Signal)
	// onCommandExit is called when cmd exits while others live.
	onCommandExit func(ws unix.WaitStatus, live []int)
	// killing is set by Session.Kill: every thread that shows up is killed.
	killing atomic.Bool
	// forks, threads and execs count the tree's new processes (fork,
	// vfork, clone without CLONE_THREAD), new threads and successful
	// execs, as the tracer's events report them (Session.Counts).
	forks, threads, execs atomic.Uint64
	// execStops counts the execve and execveat stops served (exec).
	execStops atomic.Uint64

	// The fields below are touched only on the tracer thread.
	// known: threads whose creation the parent's event has reported.
	known map[int]bool
	// held: new threads stopped before their parent's event arrived.
	held map[int]bool
	// expect: the executable planned for a pending exec, by calling thread.
	expect map[int]FileID
	// execPath: the host path planned for a pending exec, for messages.
	execPath map[int]string
	// cleanup: ExecPlan.Cleanup of a pending exec, by calling thread.
	cleanup map[int]func()
	// reaped: exits reaped while a stop was served, for run to handle.
	reaped []reapedExit
	// fast, when set, injects the fast-lookup agent at every exec stop;
	// sites are the call sites known by file, which the exec stop
	// rewrites in the files the kernel mapped (rewriteKnown), and
	// rewrites counts them with the rewriter's (the listener's).
	fast     *FastLookups
	sites    *knownSites
	rewrites *atomic.Uint64
	// freshRing: forked children to give a ring of their own at their
	// first stop (fast.Shared).
	freshRing map[int]bool
}

func newTracer(events ProcessEvents, logf func(string, ...any)) *tracer {
	return &tracer{
		events: events, logf: logf,
		live: map[int]bool{}, known: map[int]bool{}, held: map[int]bool{}, sharedVM: map[int]bool{}, noRewrite: map[int]bool{}, sole: map[int]uint64{},
		goImages: map[exeVersion]bool{},
		expect:   map[int]FileID{}, execPath: map[int]string{}, cleanup: map[int]func(){}, freshRing: map[int]bool{},
	}
}

func (t *tracer) seize(tid int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, ptraceOptions, 0, 0)
	if e != 0 {
		return fmt.Errorf("ptrace seize %d: %w", tid, e)
	}
	t.mu.Lock()
	t.live[tid] = true
	t.mu.Unlock()
	t.known[tid] = true
	return nil
}

// liveTids returns the traced threads still running.
func (t *tracer) liveTids() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]int, 0, len(t.live))
	for tid := range t.live {
		out = append(out, tid)
	}
	return out
}

// run serves ptrace stops until every traced thread has exited. cmd is the
// command's pid, whose status it returns.
func (t *tracer) run(cmd int) unix.WaitStatus {
	t.cmd = cmd
	var cmdStatus unix.WaitStatus
	var pass schedPass
	for {
		pass.step()
		var ws unix.WaitStatus
		tid, err := unix.Wait4(-1, &ws, unix.WALL|waitNoThread, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // ECHILD: nothing left to wait for
			return cmdStatus
		}
		switch {
		case ws.Exited() || ws.Signaled():
			if t.exited(tid, ws, &cmdStatus) {
				return cmdStatus
			}
		case ws.Stopped():
			t.stopped(tid, ws)
			// An exit reaped while the stop was served (the agent's
			// injection waits for its thread).
			for len(t.reaped) > 0 {
				r := t.reaped[0]
				t.reaped = t.reaped[1:]
				if t.exited(r.tid, r.ws, &cmdStatus) {
					return cmdStatus
				}
			}
		}
	}
}

// reapedExit is an exit status reaped outside run's own wait.
type reapedExit struct {
	tid int
	ws  unix.WaitStatus
}

// exited handles the exit of thread tid, and reports whether it was the
// tree's last.
func (t *tracer) exited(tid int, ws unix.WaitStatus, cmdStatus *unix.WaitStatus) bool {
	if tid == t.cmd {
		*cmdStatus = ws
	}
	t.gone(tid)
	t.events.Exited(tid, ws)
	live := t.liveTids()
	if len(live) == 0 {
		return true
	}
	if tid == t.cmd && t.onCommandExit != nil {
		t.onCommandExit(ws, live)
	}
	return false
}

func (t *tracer) gone(tid int) {
	t.mu.Lock()
	delete(t.live, tid)
	delete(t.sharedVM, tid)
	delete(t.noRewrite, tid)
	delete(t.sole, tid)
	t.mu.Unlock()
	delete(t.known, tid)
	delete(t.held, tid)
	delete(t.expect, tid)
	delete(t.execPath, tid)
	delete(t.freshRing, tid)
	t.settle(tid)
}

// settle runs the cleanup of thread tid's pending exec, if any.
func (t *tracer) settle(tid int) {
	if f := t.cleanup[tid]; f != nil {
		delete(t.cleanup, tid)
		f()
	}
}

func (t *tracer) stopped(tid int, ws unix.WaitStatus) {
	t.mu.Lock()
	t.live[tid] = true
	t.mu.Unlock()
	if t.killing.Load() {
		// SIGKILL ends any ptrace-stop; its exit is reported next.
		unix.Kill(tid, unix.SIGKILL)
	}
	sig := ws.StopSignal()
	cause := int(uint32(ws) >> 16)
	switch cause {
	case unix.PTRACE_EVENT_STOP:
		switch sig {
		case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
			// Group-stop: stay stopped, but let SIGCONT and the real
			// parent's wait see it as without a tracer.
			ptrace(unix.PTRACE_LISTEN, tid, 0, 0)
			if tid == t.cmd && t.onStop != nil {
				t.onStop(sig)
			}
			return
		}
		if !t.known[tid] {
			// A new thread whose parent's event we have not seen yet:
			// keep it stopped until its state exists.
			t.held[tid] = true
			return
		}
		t.resumeNew(tid)
	case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
		msg, _ := unix.PtraceGetEventMsg(tid)
		child := int(msg)
		flags := t.cloneFlags(tid, cause)
		if flags&unix.CLONE_THREAD != 0 {
			t.threads.Add(1)
		} else {
			t.forks.Add(1)
		}
		t.events.Clone(tid, child, flags)
		t.known[child] = true
		t.mu.Lock()
		t.live[child] = true
		t.mu.Unlock()
		if t.fast != nil && flags&unix.CLONE_VM != 0 && flags&unix.CLONE_THREAD == 0 {
			// A vfork's parent waits until the child has execed or
			// exited: if it has no other thread, nothing else runs in
			// the address space meanwhile. Any other sharer runs beside
			// the child.
			vforkAlone := flags&unix.CLONE_VFORK != 0 &&
				(t.soleSince(tid, t.threads.Load()) || threadCount(tid) == 1)
			t.mu.Lock()
			if !vforkAlone {
				t.sharedVM[child] = true
			}
			if flags&unix.CLONE_VFORK == 0 {
				t.sharedVM[tgidOf(tid)] = true
			}
			t.mu.Unlock()
		}
		if t.killing.Load() {
			unix.Kill(child, unix.SIGKILL)
		}
		if t.fast != nil && t.fast.Shared != nil && flags&unix.CLONE_VM == 0 {
			// A process of its own: a ring of its own before it runs
			// (at its first stop, which may come before or after this).
			t.freshRing[child] = true
		}
		if t.held[child] {
			delete(t.held, child)
			t.resumeNew(child)
		}
		ptrace(unix.PTRACE_CONT, tid, 0, 0)
	case unix.PTRACE_EVENT_EXEC:
		msg, _ := unix.PtraceGetEventMsg(tid)
		former := int(msg)
		want, planned := t.expect[former]
		path := t.execPath[former]
		if former != tid {
			t.gone(former)
		}
		delete(t.expect, tid)
		delete(t.execPath, tid)
		// The kernel has opened the program: the name it was given can go.
		t.settle(former)
		t.settle(tid)
		// The new image's executable, read once for the check below and
		// the agent's (goImage): nothing can change it while the thread
		// is stopped here.
		var exe *unix.Stat_t
		if planned || t.fast != nil {
			exe = statExe(tid)
		}
		if planned {
			if exe == nil || (FileID{Dev: exe.Dev, Ino: exe.Ino}) != want {
				t.logf("txexec: killed pid %d: it executed something other than %s (its path was changed during execve)", tid, path)
				unix.Kill(tid, unix.SIGKILL)
				ptrace(unix.PTRACE_CONT, tid, 0, 0)
				return
			}
		}
		t.execs.Add(1)
		t.mu.Lock()
		delete(t.sharedVM, tid) // a new address space of its own
		delete(t.noRewrite, tid)
		delete(t.noRewrite, former)
		delete(t.sole, former)
		// The kernel ended every other thread of the process before this
		// stop: the image starts with one.
		t.sole[tid] = t.threads.Load()
		t.mu.Unlock()
		t.events.Execed(tid, former)
		var sig unix.Signal
		if t.fast != nil {
			var alive bool
			if sig, alive = t.injectAgent(tid, exe); !alive {
				return
			}
		}
		ptrace(unix.PTRACE_CONT, tid, 0, uintptr(sig))
	case unix.PTRACE_EVENT_SECCOMP:
		t.exec(tid)
		ptrace(unix.PTRACE_CONT, tid, 0, 0)
	case 0:
		// Signal-delivery-stop: deliver the signal unchanged.
		ptrace(unix.PTRACE_CONT, tid, 0, uintptr(sig))
	default:
		ptrace(unix.PTRACE_CONT, tid, 0, 0)
	}
}

// resumeNew resumes thread tid from a PTRACE_EVENT_STOP: for a forked
// child's first, after giving it a ring of its own (replaceRing).
func (t *tracer) resumeNew(tid int) {
	var sig unix.Signal
	if t.freshRing[tid] {
		delete(t.freshRing, tid)
		var alive bool
		if sig, alive = t.replaceRing(tid); !alive {
			return
		}
	}
	ptrace(unix.PTRACE_CONT, tid, 0, uintptr(sig))
}

// cloneFlags reads the clone flags of the call the parent is stopped in.
// The event alone does not say them: the kernel reports a clone or clone3
// whose exit signal is SIGCHLD as a fork (PTRACE_EVENT_FORK) even with
// CLONE_VM or CLONE_FS, so the call's own flags are read whenever it is
// one of those.
func (t *tracer) cloneFlags(tid, cause int) uint64 {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err == nil {
		switch int(regs.Orig_rax) {
		case unix.SYS_CLONE:
			return regs.Rdi
		case unix.SYS_CLONE3:
			var flags uint64
			if ReadValue(Memory{Tid: tid}, uintptr(regs.Rdi), &flags) == nil {
				return flags
			}
		}
	}
	switch cause {
	case unix.PTRACE_EVENT_FORK:
		return uint64(unix.SIGCHLD)
	case unix.PTRACE_EVENT_VFORK:
		return unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)
	}
	return 0
}

// redZone is the x86-64 ABI's scratch area below the stack pointer, which we
// must not clobber when we borrow the stack for execve's new arguments.
const redZone = 128

// exec serves a seccomp-trace stop of execve/execveat: resolve, then point
// the call at the planned host file with new arguments written below the
// caller's stack, then let the kernel run it as execve.
func (t *tracer) exec(tid int) {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return
	}
	req := &ExecRequest{Tid: tid, Nr: int(regs.Orig_rax), Memory: Memory{Tid: tid}}
	switch req.Nr {
	case unix.SYS_EXECVE:
		req.Dirfd = unix.AT_FDCWD
		req.PathAddr, req.ArgvAddr, req.EnvpAddr = uintptr(regs.Rdi), uintptr(regs.Rsi), uintptr(regs.Rdx)
	case unix.SYS_EXECVEAT:
		req.Dirfd = int32(regs.Rdi)
		req.PathAddr, req.ArgvAddr, req.EnvpAddr = uintptr(regs.Rsi), uintptr(regs.Rdx), uintptr(regs.R10)
		req.Flags = int32(regs.R8)
	default:
		return
	}
	t.execStops.Add(1)
	// A pending exec of this thread that never reached PTRACE_EVENT_EXEC
	// failed in the kernel.
	t.settle(tid)
	plan := t.events.Exec(req)
	if plan.Errno == 0 {
		plan.Errno = t.rewrite(&regs, req, &plan)
	}
	if plan.Errno != 0 {
		if plan.Cleanup != nil {
			plan.Cleanup()
		}
		if t.fast != nil && req.Nr == unix.SYS_EXECVE && (plan.Errno == unix.ENOENT || plan.Errno == unix.ENOTDIR) {
			// The view found no such program: later calls of this
			// site reach the agent, which answers the same failure
			// without a stop when it is the host's (docs/fastpath.md
			// §15); the stopped thread is still in the call.
			t.rewriteCallSite(tid, regs.Rip, unix.SYS_EXECVE, func() error { return nil })
		}
		regs.Orig_rax = ^uint64(0) // skip the call
		regs.Rax = uint64(-int64(plan.Errno))
		unix.PtraceSetRegs(tid, &regs)
		return
	}
	t.expect[tid] = plan.Expect
	t.execPath[tid] = plan.Path
	if plan.Program != "" {
		t.execPath[tid] = plan.Program
	}
	if plan.Cleanup != nil {
		t.cleanup[tid] = plan.Cleanup
	}
}

func (t *tracer) rewrite(regs *unix.PtraceRegs, req *ExecRequest, plan *ExecPlan) unix.Errno {
	// Block layout, growing down from the red zone: strings, then an
	// 8-aligned argv array when the arguments change.
	var block []byte
	strAt := func(s string) int {
		off := len(block)
		block = append(block, s...)
		block = append(block, 0)
		return off
	}
	pathOff := strAt(plan.Path)
	var prefixOffs []int
	for _, a := range plan.ArgvPrefix {
		prefixOffs = append(prefixOffs, strAt(a))
	}
	var rest []uintptr
	if plan.ArgvPrefix != nil {
		orig, err := req.ReadPointers(req.ArgvAddr, 1<<16)
		if err != nil {
			return unix.EFAULT
		}
		if len(orig) > 0 {
			rest = orig[1:]
		}
		for len(block)%8 != 0 {
			block = append(block, 0)
		}
	}
	arrOff := len(block)
	nptr := 0
	if plan.ArgvPrefix != nil {
		nptr = len(prefixOffs) + len(rest) + 1
	}
	block = append(block, make([]byte, 8*nptr)...)
	base := (uintptr(regs.Rsp) - redZone - uintptr(len(block))) &^ 15
	if plan.ArgvPrefix != nil {
		put := func(i int, v uintptr) {
			for b := 0; b < 8; b++ {
				block[arrOff+8*i+b] = byte(v >> (8 * b))
			}
		}
		for i, off := range prefixOffs {
			put(i, base+uintptr(off))
		}
		for i, p := range rest {
			put(len(prefixOffs)+i, p)
		}
	}
	if err := (Memory{Tid: req.Tid}).Write(base, block); err != nil {
		t.logf("txexec: pid %d: cannot write execve arguments below its stack: %v", req.Tid, err)
		return unix.ENOMEM
	}
	regs.Orig_rax = unix.SYS_EXECVE
	regs.Rdi = uint64(base) + uint64(pathOff)
	if plan.ArgvPrefix != nil {
		regs.Rsi = uint64(base) + uint64(arrOff)
	} else {
		regs.Rsi = uint64(req.ArgvAddr)
	}
	regs.Rdx = uint64(req.EnvpAddr)
	if err := unix.PtraceSetRegs(req.Tid, regs); err != nil {
		return unix.ESRCH
	}
	return 0
}

func ptrace(req int, tid int, addr, data uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// rewritable reports whether the call sites of thread tid may be
// rewritten: false once markUnrewritable said so, until its next image.
func (t *tracer) rewritable(tid int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.noRewrite[tid]
}

// markUnrewritable records that the sites of thread tid are not to be
// rewritten in its current image.
func (t *tracer) markUnrewritable(tid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live[tid] {
		t.noRewrite[tid] = true
	}
}

// soleSince reports whether the rewriter found thread tid to be its
// process's only thread when created threads had been made, the count
// now; noteSole records that it found so.
func (t *tracer) soleSince(tid int, created uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.sole[tid]
	return ok && at == created
}

func (t *tracer) noteSole(tid int, created uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sole[tid] = created
}

// sharesVM reports whether another process may run in the address space of
// process tgid.
func (t *tracer) sharesVM(tgid int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sharedVM[tgid]
}

// threadCount is the number of threads of the process of thread tid, or
// 0 when /proc does not say.
func threadCount(tid int) int {
	if st, err := procfs.Status(tid, "Threads"); err == nil {
		if n, err := st.Int("Threads"); err == nil {
			return n
		}
	}
	return 0
}

// tgidOf is the thread-group id of thread tid, or tid when /proc does not
// say.
func tgidOf(tid int) int {
	if st, err := procfs.Status(tid, "Tgid"); err == nil {
		if tgid, err := st.Int("Tgid"); err == nil {
			return tgid
		}
	}
	return tid
}
