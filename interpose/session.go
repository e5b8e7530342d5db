package interpose

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
	"txexec/internal/sysx"
)

// Handler answers intercepted calls. Handle runs on a notification worker;
// several run at once for different threads.
type Handler interface {
	Handle(c *Call) Reply
}

// Config describes one supervised command.
type Config struct {
	// Path is the program to execute and Argv its arguments. The execve is
	// served by the Exec handler, so Path is resolved in the caller's view
	// like any later execve.
	Path string
	Argv []string
	Env  []string
	Dir  string
	// Cred, if set, are the credentials the command is executed with
	// instead of the supervisor's (a wrapped set-ID program, whose
	// supervisor runs as root: see Cred). The stub then never holds Env in
	// its own environment: it reads it from a sealed memfd, so that a
	// caller's variables never configure a root Go process.
	Cred *Cred
	// Program, if set, is the file Path names, opened by the supervisor
	// (O_PATH will do): the stub executes it through its descriptor
	// (execveat AT_EMPTY_PATH), with no path lookup by the command's
	// credentials, which may not search the directories above it (a
	// wrapped program with file capabilities, kept where only root can
	// reach it: docs/semantics.md §7). Path then only names it in messages.
	Program *os.File
	// Umask is the command's umask.
	Umask uint32
	// Files are the command's stdin, stdout and stderr.
	Files [3]*os.File
	// Rules is the filter: what happens to every system-call number.
	Rules []Rule
	// Filter, when set, is used instead of compiling Rules.
	Filter  []unix.SockFilter
	Handler Handler
	Events  ProcessEvents
	// OnReply, if set, is called after each reply is sent, with the value
	// the caller saw and the error of the send (the caller died).
	OnReply func(c *Call, r Reply, val int64, err error)
	// Workers is the initial number of notification workers (default 2);
	// more are started while all are busy, up to MaxWorkers.
	Workers    int
	MaxWorkers int
	// OnStop, if set, is called when the command enters a group-stop
	// (Ctrl-Z): job control needs the supervisor to stop too, so that the
	// shell that started it sees the job stopped.
	OnStop func(sig unix.Signal)
	// OnCommandExit, if set, is called once, on the tracer's thread, when
	// the command (the first process) has exited while other processes of
	// the tree still run; live are their thread ids. It may call
	// Session.Kill.
	OnCommandExit func(ws unix.WaitStatus, live []int)
	// Logf reports diagnostics (to stderr by default).
	Logf func(format string, args ...any)
	// PidNamespace runs the tree in a new pid namespace, under an init
	// process of txexec's own (pidns.go), so that the command is pid 2
	// and its pids repeat from run to run. It needs CAP_SYS_ADMIN.
	PidNamespace bool
	// FixedAddresses turns address-space layout randomization off for the
	// tree (personality ADDR_NO_RANDOMIZE), so that addresses — which
	// programs hash, print and mix into temporary names — repeat.
	FixedAddresses bool
	// StubExec, when set, starts the stub instead of txexec's own file:
	// a program and the arguments that precede the stub's own (a dynamic
	// loader, its options and txexec's file), where txexec's file and
	// libraries are not where its loader looks (a replay's root).
	StubExec []string
	// FastLookups, when set, turns the fast path for read-only lookups on
	// (docs/fastpath.md): Rules gain the agent page's conditions
	// (FastLookupRules), the agent is injected at every exec stop and call
	// sites are rewritten while their first call is served.
	FastLookups *FastLookups
	// Profiled says a CPU profile of the supervisor is being taken: the
	// workers then let SIGPROF through (the profiler's per-thread timer
	// signal), and block every signal around each ADDFD wait instead (see
	// notifAddfdSend), so that their time is in the profile.
	Profiled bool
	// TimeService makes the workers time each call they serve, for
	// Session.Service: two clock reads per call, off unless asked for.
	TimeService bool
}

// DefaultWorkers and DefaultMaxWorkers size the notification worker pool.
const (
	DefaultWorkers    = 2
	DefaultMaxWorkers = 64
)

// Session is one command tree running under the supervisor.
type Session struct {
	cfg Config
	pid int
	// initPid is the pid namespace's init (PidNamespace), 0 without one.
	initPid int
	tr      *tracer
	lst     *listener
	done    chan struct{}
	status  unix.WaitStatus
	err     error
}

// ExitStatus converts a wait status into a shell-style exit status: the
// exit code, or 128+N for death by signal N.
func ExitStatus(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// Start runs cfg.Argv under the filter and returns once the command is
// running. All ptrace work happens on one dedicated, locked OS thread.
func Start(cfg Config) (*Session, error) {
	if len(cfg.Argv) == 0 || cfg.Path == "" {
		return nil, errors.New("no command")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxWorkers < cfg.Workers {
		cfg.MaxWorkers = DefaultMaxWorkers
	}
	if cfg.Logf == nil {
		cfg.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	}
	if err := quietStops(); err != nil {
		return nil, err
	}
	// The filter is compiled while the stub starts (a re-executed txexec
	// initializing its runtime): libseccomp takes a few milliseconds over
	// the whole syscall table, part of every run's fixed cost.
	if cfg.FastLookups != nil {
		if cfg.Filter != nil {
			return nil, errors.New("fast lookups need the filter compiled from Rules")
		}
		if err := cfg.FastLookups.check(); err != nil {
			return nil, err
		}
		cfg.Rules = FastLookupRules(cfg.Rules, cfg.FastLookups.Base)
	}
	filter := func() ([]unix.SockFilter, error) { return cfg.Filter, nil }
	if cfg.Filter == nil {
		type compiled struct {
			prog []unix.SockFilter
			err  error
		}
		c := make(chan compiled, 1)
		go func() {
			prog, err := CompileFilter(cfg.Rules)
			c <- compiled{prog, err}
		}()
		filter = func() ([]unix.SockFilter, error) { r := <-c; return r.prog, r.err }
	}
	s := &Session{cfg: cfg, done: make(chan struct{}), tr: newTracer(cfg.Events, cfg.Logf)}
	s.tr.onStop = cfg.OnStop
	s.tr.onCommandExit = cfg.OnCommandExit
	s.tr.fast = cfg.FastLookups
	started := make(chan error, 1)
	go s.tracerThread(filter, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return s, nil
}

// Pid is the command's process id.
func (s *Session) Pid() int { return s.pid }

// Wait blocks until every process of the tree has exited and returns the
// command's wait status.
func (s *Session) Wait() (unix.WaitStatus, error) {
	<-s.done
	return s.status, s.err
}

// Done is closed when the whole tree has exited.
func (s *Session) Done() <-chan struct{} { return s.done }

// Rewrites returns how many call sites have been rewritten to reach the
// fast-lookup agent (Config.FastLookups).
func (s *Session) Rewrites() uint64 { return s.lst.rewrites.Load() }

// Served returns how many system calls the supervisor has answered so far:
// every notification the filter raised, whatever the reply.
func (s *Session) Served() uint64 { return s.lst.served.Load() }

// ServedByNr returns, for every system call number below 512 the
// supervisor has answered, how many times: where Served's count goes.
func (s *Session) ServedByNr() map[int]uint64 {
	m := map[int]uint64{}
	for nr := range s.lst.servedNr {
		if n := s.lst.servedNr[nr].Load(); n > 0 {
			m[nr] = n
		}
	}
	return m
}

// Service is where the workers' time went (Config.TimeService), for
// benchmarks' accounting (TXEXEC_STATS).
type Service struct {
	// Handle is the time from a notification's receipt to its reply
	// (the handlers: copy-in, the view, the host calls, copy-out); Reply
	// the time in the replies, which for a descriptor (ADDFD) includes the
	// wait for the caller to take it and, the caller being woken on the
	// worker's CPU (idleHandoff), the caller's run there until it next
	// blocks. Both zero unless TimeService.
	Handle, Reply time.Duration
	// DescriptorReplies counts the replies that installed a descriptor.
	DescriptorReplies uint64
}

// Service returns the workers' times and descriptor replies so far.
func (s *Session) Service() Service {
	l := s.lst
	return Service{Handle: time.Duration(l.handleNs.Load()), Reply: time.Duration(l.replyNs.Load()), DescriptorReplies: l.fdReplies.Load()}
}

// Counts are the process-tree events the tracer saw, for benchmarks'
// accounting of where a run's time went (TXEXEC_STATS).
type Counts struct {
	// Forks are new processes (fork, vfork, clone without CLONE_THREAD),
	// Threads new threads, Execs execs that replaced an image.
	Forks, Threads, Execs uint64
	// ExecStops are the execve and execveat calls the tracer served
	// (their seccomp stops), failed ones included.
	ExecStops uint64
}

// Counts returns the process-tree events seen so far.
func (s *Session) Counts() Counts {
	return Counts{Forks: s.tr.forks.Load(), Threads: s.tr.threads.Load(), Execs: s.tr.execs.Load(), ExecStops: s.tr.execStops.Load()}
}

// Live lists the threads of the tree that are still running.
func (s *Session) Live() []int { return s.tr.liveTids() }

// Kill sends SIGKILL to every thread of the tree, and to every thread the
// tree creates from now on (a fork racing with the kill).
func (s *Session) Kill() {
	s.tr.killing.Store(true)
	for _, tid := range s.tr.liveTids() {
		unix.Kill(tid, unix.SIGKILL)
	}
}

func (s *Session) tracerThread(filter func() ([]unix.SockFilter, error), started chan<- error) {
	// Never unlocked: the thread is the tracer and exits with the goroutine.
	runtime.LockOSThread()
	_ = sysx.UnbatchThread() // a failure leaves it a batch thread: slower, not wrong
	defer close(s.done)
	if err := s.startStub(filter); err != nil {
		started <- err
		return
	}
	started <- nil
	s.status = s.tr.run(s.pid)
	s.lst.stop()
	if s.initPid != 0 {
		// It exits once its last child has; the wait loop may have
		// reaped it already (ECHILD).
		var ws unix.WaitStatus
		unix.Wait4(s.initPid, &ws, 0, nil)
	}
}

// startStub starts the stub and hands it the program filter returns,
// which may still be being compiled when the stub starts.
func (s *Session) startStub(filter func() ([]unix.SockFilter, error)) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("create control socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "txexec-control")
	theirs := os.NewFile(uintptr(fds[1]), "txexec-control-stub")
	defer ours.Close()
	exe, err := ownExecutable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	// Descriptors as raw numbers: os.File.Fd would put a non-blocking
	// inherited descriptor into blocking mode, for the parent too.
	files := make([]uintptr, 3, 4)
	for i := range 3 {
		files[i] = uintptr(i)
		if f := s.cfg.Files[i]; f != nil {
			files[i] = f.Fd()
		}
	}
	// The control socket goes above every descriptor txexec inherited,
	// which keep their numbers: `exec 3<dir; txexec -- cmd` gives cmd its
	// descriptor 3.
	files = append(files, InheritedFDs()...)
	sockFD := len(files)
	files = append(files, theirs.Fd())
	env := append([]string{}, s.cfg.Env...)
	if s.cfg.Cred != nil {
		envFile, err := envMemfd(s.cfg.Env)
		if err != nil {
			theirs.Close()
			return err
		}
		defer envFile.Close()
		files = append(files, envFile.Fd())
		env = []string{fmt.Sprintf("%s=%d", stubEnvFDEnv, sockFD+1), stubCredEnv + "=" + s.cfg.Cred.encode()}
	}
	if s.cfg.Program != nil {
		env = append(env, fmt.Sprintf("%s=%d", stubProgramFDEnv, len(files)))
		files = append(files, s.cfg.Program.Fd())
	}
	env = append(env, StubEnv+"=1", fmt.Sprintf("%s=%o", stubUmaskEnv, s.cfg.Umask),
		fmt.Sprintf("%s=%d", stubSockEnv, sockFD))
	// The tree dies with us: the stub by Pdeathsig until it is traced,
	// then every tracee by PTRACE_O_EXITKILL.
	sys := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if s.cfg.FixedAddresses {
		env = append(env, stubFixedAddressesEnv+"=1")
	}
	if f := s.cfg.FastLookups; f != nil && f.Shared != nil && f.Shared.NativeOpens {
		// The stub makes its copy's mounts update no atime.
		env = append(env, stubNoatimeEnv+"=1")
		sys.Cloneflags |= unix.CLONE_NEWNS
	}
	if s.cfg.PidNamespace {
		env = append(env, stubPidNSEnv+"=1")
		sys.Cloneflags |= unix.CLONE_NEWPID
		if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
			theirs.Close()
			return fmt.Errorf("control socket: %w", err)
		}
	}
	argv := append([]string{"txexec", s.cfg.Path}, s.cfg.Argv...)
	if len(s.cfg.StubExec) > 0 {
		exe = s.cfg.StubExec[0]
		argv = append(append([]string(nil), s.cfg.StubExec...), argv[1:]...)
		env = append(env, stubExecEnv+"="+strings.Join(s.cfg.StubExec, "\n"))
	}
	pid, _, err := syscall.StartProcess(exe, argv, &syscall.ProcAttr{
		Dir: s.cfg.Dir, Env: env, Files: files, Sys: sys,
	})
	theirs.Close()
	if err != nil {
		return fmt.Errorf("start stub: %w", err)
	}
	// Reaped by the tracer's wait loop.
	s.pid = pid
	fail := func(err error) error {
		unix.Kill(s.pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(s.pid, &ws, 0, nil)
		return err
	}
	prog, err := filter()
	if err != nil {
		return fail(err)
	}
	if _, err := ours.Write(encodeBPF(prog)); err != nil {
		return fail(fmt.Errorf("send filter to stub: %w", err))
	}
	buf := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4)+unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, _, _, err := unix.Recvmsg(fds[0], buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n != 4 {
		return fail(fmt.Errorf("stub did not start (see its message above)"))
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return fail(fmt.Errorf("stub sent no listener"))
	}
	var rights []int
	var cred *unix.Ucred
	for i := range msgs {
		switch msgs[i].Header.Type {
		case unix.SCM_RIGHTS:
			rights, err = unix.ParseUnixRights(&msgs[i])
		case unix.SCM_CREDENTIALS:
			cred, err = unix.ParseUnixCredentials(&msgs[i])
		}
		if err != nil {
			break
		}
	}
	if err != nil || len(rights) != 1 {
		return fail(fmt.Errorf("stub sent no listener"))
	}
	tid := int(binary.NativeEndian.Uint32(buf))
	if s.cfg.PidNamespace {
		// The stub's own id is its namespace's; the kernel translated
		// the one in its credentials into ours.
		if cred == nil {
			unix.Close(rights[0])
			return fail(fmt.Errorf("stub in the pid namespace sent no credentials"))
		}
		s.initPid, tid = s.pid, int(cred.Pid)
		st, err := procfs.Status(tid)
		tgid, err2 := st.Int("Tgid")
		if err != nil || err2 != nil {
			unix.Close(rights[0])
			return fail(fmt.Errorf("find the stub in the pid namespace: %v", errors.Join(err, err2)))
		}
		s.pid = tgid
	}
	if err := s.tr.seize(tid); err != nil {
		unix.Close(rights[0])
		return fail(err)
	}
	s.lst = newListener(rights[0], s.cfg)
	s.lst.tr = s.tr
	s.tr.sites, s.tr.rewrites = &s.lst.known, &s.lst.rewrites
	s.lst.start(s.cfg.Workers)
	if _, err := ours.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("release stub: %w", err))
	}
	return nil
}

// listener serves the seccomp notification fd with a pool of workers.
//
// Every thread waiting in SECCOMP_IOCTL_NOTIF_RECV is woken by every
// notification (the kernel's wait there is not exclusive), and all but one
// go back to sleep: each idle worker in RECV costs two context switches per
// intercepted call. So one worker at a time receives; the others wait on
// standby. A worker whose handler blocks (an open of a FIFO waiting for its
// writer, a long copy-up) would leave the rest of the tree unserved: the
// watchdog then puts a standby worker (or a new one, up to MaxWorkers) into
// RECV. A worker that finishes a call while another one receives goes on
// standby. A reply that installs a descriptor waits for the caller (see
// sendFD).
type listener struct {
	fd  int
	cfg Config

	stopping atomic.Bool
	// quit is closed by stop: the watchdog returns.
	quit chan struct{}
	// receivers counts the workers in (or about to enter) NOTIF_RECV, busy
	// the workers serving a call, replying those in a reply that waits for
	// the caller (ADDFD), served the calls answered so far.
	receivers atomic.Int32
	busy      atomic.Int32
	replying  atomic.Int32
	served    atomic.Uint64
	// servedNr counts the answered calls by number (x86-64 numbers are
	// below 512; others, such as the in-program API's, are not counted).
	servedNr [512]atomic.Uint64
	// fdReplies counts the replies that installed a descriptor;
	// handleNs and replyNs add up the time the workers spent in handlers
	// and in replies (Config.TimeService).
	// (One name per line: checklocks misplaces the annotations of later
	// fields after a line that declares two.)
	fdReplies atomic.Uint64
	handleNs  atomic.Int64
	replyNs   atomic.Int64
	// handoffOff: a worker thread could not leave SCHED_IDLE; no worker
	// makes the idleHandoff any more.
	handoffOff atomic.Bool
	// fast is Config.FastLookups; rewrites counts the call sites
	// rewritten; known are the sites rewritten so far, by file; tr is the
	// session's tracer, which knows the processes (rewrite.go).
	fast     *FastLookups
	rewrites atomic.Uint64
	known    knownSites
	tr       *tracer
	total    atomic.Int32
	// standbyN counts the workers waiting for the receiving position;
	// handoffs is the futex word they wait on: positions handed out and
	// not yet taken.
	standbyN atomic.Int32
	handoffs atomic.Uint32
	// watchParked is set while the watchdog sleeps for lack of calls; a
	// worker that takes a call then sends on watchWake.
	watchParked atomic.Bool
	watchWake   chan struct{}
	wg          sync.WaitGroup

	pidfds pidfdCache

	// addMu serializes addReceiver.
	addMu sync.Mutex

	mu sync.Mutex
	// tids are the OS threads of the running workers.
	// +checklocks:mu
	tids map[int]bool
}

// The watchdog looks every watchTick while calls are answered, backing off
// to watchMaxTick while none is; it sleeps until the next call after
// watchQuietTicks ticks without one in flight.
//
// Its looks are for the waits nobody announced: a handler that knows it
// waits for another process (a FIFO's other end, a lock's holder) sends a
// worker into RECV itself (Call.WillWait), so what is left is a host call
// that is slow for the host's reasons (a large copy-up, a slow file
// system), which stalls the rest of the tree for at most about two ticks.
// Each look wakes a thread of the runtime, on whichever CPU, while a traced
// program computes: at 2 ms, some 500 wake-ups a second cost a loop of stat
// calls 5-10% of its overhead per call (docs/performance.md, step 28).
const (
	watchTick       = 10 * time.Millisecond
	watchMaxTick    = 80 * time.Millisecond
	watchQuietTicks = 10
)

func newListener(fd int, cfg Config) *listener {
	if err := setSyncWakeUp(fd); err != nil && cfg.Logf != nil && err != unix.EINVAL {
		cfg.Logf("txexec: cannot set SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: %v", err)
	}
	return &listener{fd: fd, cfg: cfg, tids: map[int]bool{}, fast: cfg.FastLookups,
		quit: make(chan struct{}), watchWake: make(chan struct{}, 1)}
}

func (l *listener) start(n int) {
	for i := 0; i < n; i++ {
		l.spawn()
	}
	l.wg.Add(1)
	go l.watch()
}

func (l *listener) spawn() {
	l.total.Add(1)
	l.wg.Add(1)
	go l.worker()
}

// claimReceiver makes the calling worker the receiver unless another one is.
// It must be a compare-and-swap: an add-then-undo lets two workers that
// claim at once both see the other's transient count and both go to
// standby, and with the receiver of the moment gone to serve its call
// nobody receives any more — the tree then waits for ever.
func (l *listener) claimReceiver() bool {
	return l.receivers.CompareAndSwap(0, 1)
}

// worker receives and answers notifications on its own locked thread, so
// that SYNC_WAKE_UP hands the CPU straight between tracee and worker.
func (l *listener) worker() {
	runtime.LockOSThread()
	// A thread left SCHED_IDLE (idleHandoff.stuck) ends with the
	// goroutine: the runtime ends a thread whose goroutine exits locked.
	keepThread := true
	defer func() {
		if keepThread {
			runtime.UnlockOSThread()
		}
	}()
	defer l.wg.Done()
	_ = sysx.UnbatchThread() // a failure leaves it a batch thread: slower, not wrong
	restore, err := workerSignals(l.cfg.Profiled)
	if err != nil {
		l.cfg.Logf("txexec: worker signal mask: %v", err)
		return
	}
	defer restore()
	var handoff idleHandoff
	if !l.handoffOff.Load() {
		h, stuck, err := newIdleHandoff()
		if stuck {
			keepThread = false
			l.replaceStuck(err)
			return
		}
		handoff = h
	}
	tid := unix.Gettid()
	l.mu.Lock()
	l.tids[tid] = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.tids, tid)
		l.mu.Unlock()
	}()
	var n seccompNotif
	var pass schedPass
	for !l.stopping.Load() {
		if !l.claimReceiver() && !l.waitStandby() {
			return
		}
		pass.step()
		err := notifRecv(l.fd, &n)
		l.receivers.Add(-1)
		if err != nil {
			if err == unix.EINTR || err == unix.ENOENT {
				continue
			}
			if !l.stopping.Load() {
				l.cfg.Logf("txexec: receive notification: %v", err)
			}
			return
		}
		l.busy.Add(1)
		if l.watchParked.Load() && l.watchParked.CompareAndSwap(true, false) {
			select {
			case l.watchWake <- struct{}{}:
			default:
			}
		}
		var t0, t1 time.Time
		if l.cfg.TimeService {
			t0 = time.Now()
		}
		c := newCall(l, &n)
		c.handoff = &handoff
		r, injected := l.injectedFD(c)
		if !injected {
			if l.fast != nil && isAgentNr(c.Nr) {
				l.rewriteSite(c)
			}
			r = l.handle(c)
		}
		if l.cfg.TimeService {
			t1 = time.Now()
		}
		var val int64
		if r.IsFD() {
			l.fdReplies.Add(1)
			val, err = l.sendFD(c, r)
		} else {
			val, err = c.send(r)
		}
		if l.cfg.TimeService {
			l.handleNs.Add(int64(t1.Sub(t0)))
			l.replyNs.Add(int64(time.Since(t1)))
		}
		l.served.Add(1)
		if uint(c.Nr) < uint(len(l.servedNr)) {
			l.servedNr[c.Nr].Add(1)
		}
		l.busy.Add(-1)
		if r.kind == replyContinue && c.memRead {
			l.cfg.Logf("txexec: internal error: %v for %v; answered EIO", errContinueAfterRead, c)
		}
		if l.cfg.OnReply != nil {
			l.cfg.OnReply(c, r, val, err)
		}
		if handoff.stuck != nil {
			keepThread = false
			l.replaceStuck(handoff.stuck)
			return
		}
	}
}

// replaceStuck is called by a worker whose thread could not leave
// SCHED_IDLE (idleHandoff), before it ends with that thread: no worker
// makes the hand-off any more, and a new worker takes its place.
func (l *listener) replaceStuck(err error) {
	if !l.handoffOff.Swap(true) {
		l.cfg.Logf("txexec: a worker thread could not leave SCHED_IDLE (%v); descriptor replies no longer hand the CPU to the caller", err)
	}
	l.total.Add(-1)
	if !l.stopping.Load() {
		l.spawn()
	}
}

// injectedFD answers the openat the tracer injected into a thread to
// bring in the descriptors of the fast path's shared memory (inject.go
// mapShared), which no handler sees.
func (l *listener) injectedFD(c *Call) (Reply, bool) {
	if l.fast == nil || l.fast.Shared == nil || c.Nr != unix.SYS_OPENAT {
		return Reply{}, false
	}
	return l.fast.takeFD(c)
}

// sendFD sends a reply that installs a descriptor (or two). ADDFD with SEND returns
// only once the caller has run and taken the descriptor, and the kernel's
// wake-up of the caller is not a sync one (the worker's idleHandoff keeps
// it on the worker's CPU where it can), so the wait is sometimes long
// (the caller woken on the other CPU). It used to hand the receiving
// position to a standby worker while these waits were slow; in real
// programs that cost far more than it saved: every hand-off woke a standby
// worker and parked another in futex(2), and a parked worker holds its
// Go P in a system call, which the runtime's sysmon retakes and hands to a
// newly woken thread, and which keeps sysmon polling every 20 µs. Measured
// on dpkg -i + -r in a transaction, half its opens handed off, and the
// hand-off made it 1.3 times slower (docs/performance.md, step 18). replying
// still counts the waits for SettleReplies.
func (l *listener) sendFD(c *Call, r Reply) (int64, error) {
	l.replying.Add(1)
	val, err := c.send(r)
	l.replying.Add(-1)
	return val, err
}

// waitStandby blocks until addReceiver hands the calling worker the
// receiving position (true) or the listener stops (false). Standby workers
// wait in futex(2) rather than on a channel: waking a goroutine locked to
// its thread through the Go scheduler takes a second thread's wake-up.
func (l *listener) waitStandby() bool {
	l.standbyN.Add(1)
	defer l.standbyN.Add(-1)
	for !l.stopping.Load() {
		h := l.handoffs.Load()
		if h == 0 {
			futexWait(&l.handoffs, 0)
			continue
		}
		if l.handoffs.CompareAndSwap(h, h-1) {
			l.receivers.Add(1)
			return true
		}
	}
	return false
}

// addReceiver sends a standby worker, or a new one, into RECV. The
// watchdog and handlers about to wait (Call.WillWait) call it: addMu keeps
// two of them from both handing the one standby worker a turn.
func (l *listener) addReceiver() {
	l.addMu.Lock()
	defer l.addMu.Unlock()
	if l.standbyN.Load() > int32(l.handoffs.Load()) {
		l.handoffs.Add(1)
		futexWake(&l.handoffs, 1)
		return
	}
	if l.total.Load() < int32(l.cfg.MaxWorkers) {
		l.spawn()
	}
}

// futex(2) operations (linux/futex.h).
const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// futexWait sleeps while *addr == val (or until woken or interrupted).
func futexWait(addr *atomic.Uint32, val uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitPrivate, uintptr(val), 0, 0, 0)
}

// futexWake wakes up to n threads waiting on addr.
func futexWake(addr *atomic.Uint32, n int) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakePrivate, uintptr(n), 0, 0, 0)
}

// watch adds a receiver when, for a whole tick, a call was being served,
// none was answered and no worker was receiving: the busy worker may be
// blocked, and the rest of the tree would wait for it. While no call is
// answered its tick doubles, up to watchMaxTick (a handler blocked for
// minutes, such as an open of a FIFO nobody writes, must not keep the
// supervisor waking up every few milliseconds); it sleeps altogether after
// watchQuietTicks ticks without any call in flight.
func (l *listener) watch() {
	defer l.wg.Done()
	tick := time.NewTimer(watchTick)
	defer tick.Stop()
	var last uint64
	quiet := 0
	every := watchTick
	for {
		select {
		case <-tick.C:
		case <-l.quit:
			return
		}
		served := l.served.Load()
		// A busy worker may be blocked; and every worker in standby
		// would leave nobody receiving (which claimReceiver rules out,
		// but a lost receiver must never hang the tree).
		if served == last && l.receivers.Load() == 0 && (l.busy.Load() > 0 || l.standbyN.Load() == l.total.Load()) {
			l.addReceiver()
		}
		if served == last && l.busy.Load() == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if served == last {
			every = min(2*every, watchMaxTick)
		} else {
			every = watchTick
		}
		last = served
		if quiet >= watchQuietTicks {
			// Nothing to watch: sleep until a worker takes a call.
			l.watchParked.Store(true)
			if l.busy.Load() == 0 && l.receivers.Load() > 0 {
				select {
				case <-l.watchWake:
				case <-l.quit:
					return
				}
			}
			l.watchParked.Store(false)
			quiet = 0
			every = watchTick
			last = l.served.Load()
		}
		tick.Reset(every)
	}
}

func (l *listener) handle(c *Call) (r Reply) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 8192)
			buf = buf[:runtime.Stack(buf, false)]
			l.cfg.Logf("txexec: internal error serving %v: %v\n%s", c, p, buf)
			r = Fail(unix.EIO)
		}
	}()
	return l.cfg.Handler.Handle(c)
}

// stop ends the workers: the receiving ones are blocked in NOTIF_RECV,
// which only a signal interrupts, so each is poked with workerWake (the one
// signal their mask lets through, ignored by the Go runtime) until it
// returns; standby ones are woken from their futex.
func (l *listener) stop() {
	l.stopping.Store(true)
	close(l.quit)
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	pid := os.Getpid()
	for {
		futexWake(&l.handoffs, math.MaxInt32) // standby workers
		l.mu.Lock()
		for tid := range l.tids {
			unix.Tgkill(pid, tid, workerWake)
		}
		l.mu.Unlock()
		select {
		case <-done:
			unix.Close(l.fd)
			l.pidfds.close()
			return
		case <-time.After(time.Millisecond):
		}
	}
}
