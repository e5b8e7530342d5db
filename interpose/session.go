package interpose

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
	// Logf reports diagnostics (to stderr by default).
	Logf func(format string, args ...any)
}

// DefaultWorkers and DefaultMaxWorkers size the notification worker pool.
const (
	DefaultWorkers    = 2
	DefaultMaxWorkers = 64
)

// Session is one command tree running under the supervisor.
type Session struct {
	cfg    Config
	pid    int
	tr     *tracer
	lst    *listener
	done   chan struct{}
	status unix.WaitStatus
	err    error
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
	prog := cfg.Filter
	if prog == nil {
		var err error
		if prog, err = CompileFilter(cfg.Rules); err != nil {
			return nil, err
		}
	}
	s := &Session{cfg: cfg, done: make(chan struct{}), tr: newTracer(cfg.Events, cfg.Logf)}
	s.tr.onStop = cfg.OnStop
	started := make(chan error, 1)
	go s.tracerThread(prog, started)
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

// Live lists the threads of the tree that are still running.
func (s *Session) Live() []int { return s.tr.liveTids() }

// Kill sends SIGKILL to every thread of the tree.
func (s *Session) Kill() {
	for _, tid := range s.tr.liveTids() {
		unix.Kill(tid, unix.SIGKILL)
	}
}

func (s *Session) tracerThread(prog []unix.SockFilter, started chan<- error) {
	// Never unlocked: the thread is the tracer and exits with the goroutine.
	runtime.LockOSThread()
	defer close(s.done)
	if err := s.startStub(prog); err != nil {
		started <- err
		return
	}
	started <- nil
	s.status = s.tr.run(s.pid)
	s.lst.stop()
}

func (s *Session) startStub(prog []unix.SockFilter) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("create control socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "txexec-control")
	theirs := os.NewFile(uintptr(fds[1]), "txexec-control-stub")
	defer ours.Close()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	files := []*os.File{s.cfg.Files[0], s.cfg.Files[1], s.cfg.Files[2], theirs}
	for i := 0; i < 3; i++ {
		if files[i] == nil {
			files[i] = []*os.File{os.Stdin, os.Stdout, os.Stderr}[i]
		}
	}
	proc, err := os.StartProcess(exe, append([]string{"txexec", s.cfg.Path}, s.cfg.Argv...), &os.ProcAttr{
		Dir:   s.cfg.Dir,
		Env:   append(append([]string{}, s.cfg.Env...), StubEnv+"=1", fmt.Sprintf("%s=%o", stubUmaskEnv, s.cfg.Umask)),
		Files: files,
		// The tree dies with us: the stub by Pdeathsig until it is
		// traced, then every tracee by PTRACE_O_EXITKILL.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	theirs.Close()
	if err != nil {
		return fmt.Errorf("start stub: %w", err)
	}
	s.pid = proc.Pid
	proc.Release() // reaped by the tracer's wait loop, never by os.Process
	fail := func(err error) error {
		unix.Kill(s.pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(s.pid, &ws, 0, nil)
		return err
	}
	if _, err := ours.Write(encodeBPF(prog)); err != nil {
		return fail(fmt.Errorf("send filter to stub: %w", err))
	}
	buf := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(fds[0], buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n != 4 {
		return fail(fmt.Errorf("stub did not start (see its message above)"))
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return fail(fmt.Errorf("stub sent no listener"))
	}
	rights, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(rights) != 1 {
		return fail(fmt.Errorf("stub sent no listener"))
	}
	tid := int(binary.NativeEndian.Uint32(buf))
	if err := s.tr.seize(tid); err != nil {
		unix.Close(rights[0])
		return fail(err)
	}
	s.lst = newListener(rights[0], s.cfg)
	s.lst.start(s.cfg.Workers)
	if _, err := ours.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("release stub: %w", err))
	}
	return nil
}

// listener serves the seccomp notification fd with a pool of workers.
type listener struct {
	fd  int
	cfg Config

	stopping atomic.Bool
	idle     atomic.Int32
	total    atomic.Int32
	wg       sync.WaitGroup

	mu sync.Mutex
	// tids are the OS threads of the running workers. Guarded by mu.
	tids map[int]bool
}

func newListener(fd int, cfg Config) *listener {
	if err := setSyncWakeUp(fd); err != nil && cfg.Logf != nil && err != unix.EINVAL {
		cfg.Logf("txexec: cannot set SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: %v", err)
	}
	return &listener{fd: fd, cfg: cfg, tids: map[int]bool{}}
}

func (l *listener) start(n int) {
	for i := 0; i < n; i++ {
		l.spawn()
	}
}

func (l *listener) spawn() {
	l.total.Add(1)
	l.idle.Add(1)
	l.wg.Add(1)
	go l.worker()
}

// worker receives and answers notifications on its own locked thread, so
// that SYNC_WAKE_UP hands the CPU straight between tracee and worker.
func (l *listener) worker() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer l.wg.Done()
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
	for !l.stopping.Load() {
		if err := notifRecv(l.fd, &n); err != nil {
			if err == unix.EINTR || err == unix.ENOENT {
				continue
			}
			if !l.stopping.Load() {
				l.cfg.Logf("txexec: receive notification: %v", err)
			}
			return
		}
		if l.idle.Add(-1) == 0 && l.total.Load() < int32(l.cfg.MaxWorkers) {
			// Every worker is busy (some handler may block, e.g. opening
			// a FIFO): keep one ready for the rest of the tree.
			l.spawn()
		}
		c := newCall(l, &n)
		r := l.handle(c)
		val, err := c.send(r)
		if r.kind == replyContinue && c.memRead {
			l.cfg.Logf("txexec: internal error: %v for %v; answered EIO", errContinueAfterRead, c)
		}
		if l.cfg.OnReply != nil {
			l.cfg.OnReply(c, r, val, err)
		}
		l.idle.Add(1)
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

// stop ends the workers: they are blocked in NOTIF_RECV, which only a signal
// interrupts, so each is poked with SIGURG (the Go runtime's own preemption
// signal, harmless) until it returns.
func (l *listener) stop() {
	l.stopping.Store(true)
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	pid := os.Getpid()
	for {
		l.mu.Lock()
		for tid := range l.tids {
			unix.Tgkill(pid, tid, unix.SIGURG)
		}
		l.mu.Unlock()
		select {
		case <-done:
			unix.Close(l.fd)
			return
		case <-time.After(time.Millisecond):
		}
	}
}
