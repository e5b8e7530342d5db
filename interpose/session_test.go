package interpose

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	RunStubIfRequested()
	if os.Getenv(getuidLoopEnv) != "" {
		getuidLoop()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hostExec is a minimal ProcessEvents: exec the path as given (relative to
// the tracee's real cwd), as a plain host would.
type hostExec struct {
	mu sync.Mutex
	// +checklocks:mu
	clones int
	// +checklocks:mu
	execs []string
}

func (h *hostExec) Clone(parent, child int, flags uint64) {
	h.mu.Lock()
	h.clones++
	h.mu.Unlock()
}
func (h *hostExec) Exec(req *ExecRequest) ExecPlan {
	p, err := req.ReadPath(req.PathAddr)
	if err != nil {
		return ExecPlan{Errno: err.(unix.Errno)}
	}
	if !filepath.IsAbs(p) {
		cwd, _ := os.Readlink("/proc/" + strconv.Itoa(req.Tid) + "/cwd")
		p = filepath.Join(cwd, p)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return ExecPlan{Errno: err.(unix.Errno)}
	}
	h.mu.Lock()
	h.execs = append(h.execs, p)
	h.mu.Unlock()
	return ExecPlan{Path: p, Expect: FileID{Dev: st.Dev, Ino: st.Ino}}
}
func (h *hostExec) Execed(tgid, former int)            {}
func (h *hostExec) Exited(tid int, ws unix.WaitStatus) {}

// getuidHandler answers getuid with 4242 and lets everything else run.
type getuidHandler struct{}

func (getuidHandler) Handle(c *Call) Reply {
	if c.Nr == unix.SYS_GETUID {
		return Return(4242)
	}
	return Continue()
}

func run(t *testing.T, h Handler, argv ...string) (string, int) {
	t.Helper()
	return runNotifying(t, h, unix.SYS_GETUID, nil, argv...)
}

// runNotifying runs argv (argv[0] a path) under h, with the calls nr
// notified and every reply passed to onReply (if not nil), and returns its
// standard output and exit status.
func runNotifying(t *testing.T, h Handler, nr int, onReply func(*Call, Reply, int64, error), argv ...string) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	s, err := Start(Config{
		Path:    argv[0],
		Argv:    argv,
		Env:     os.Environ(),
		Files:   [3]*os.File{os.Stdin, w, os.Stderr},
		Handler: h,
		Events:  &hostExec{},
		OnReply: onReply,
		Rules: allowRest([]Rule{
			{Nr: unix.SYS_EXECVE, Action: ActTrace}, {Nr: unix.SYS_EXECVEAT, Action: ActTrace},
			{Nr: nr, Action: ActNotify},
		}),
	})
	require.NoError(t, err)
	w.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(r)
	ws, err := s.Wait()
	require.NoError(t, err)
	return out.String(), ExitStatus(ws)
}

// allowRest adds ActAllow for every number below 470 without a rule.
func allowRest(rules []Rule) []Rule {
	have := map[int]bool{}
	for _, r := range rules {
		have[r.Nr] = true
	}
	for nr := 0; nr < 470; nr++ {
		if !have[nr] {
			rules = append(rules, Rule{Nr: nr, Action: ActAllow})
		}
	}
	return rules
}

// faultingHandler dereferences nil while serving getuid.
type faultingHandler struct{ getuidHandler }

func (h faultingHandler) Handle(c *Call) Reply {
	if c.Nr == unix.SYS_GETUID {
		var p *int
		return Return(int64(*p))
	}
	return h.getuidHandler.Handle(c)
}

// TestSessionSurvivesHandlerFault: a handler that faults (a bug) fails
// that call with EIO and the supervisor goes on serving; the fault must
// not kill txexec, whatever its workers' signal masks.
func TestSessionSurvivesHandlerFault(t *testing.T) {
	out, st := run(t, faultingHandler{}, "/bin/sh", "-c", "id -u; id -u; echo served")
	// getuid cannot fail: the EIO reaches id as uid (uid_t)-5.
	assert.Equal(t, "4294967291\n4294967291\nserved\n", out)
	assert.Equal(t, 0, st)
}

func TestSessionRunsCommandAndServesCalls(t *testing.T) {
	out, st := run(t, getuidHandler{}, "/bin/sh", "-c", "id -u; exit 3")
	assert.Equal(t, "4242\n", out)
	assert.Equal(t, 3, st)
}

func TestSessionForkStormAndSignals(t *testing.T) {
	out, st := run(t, getuidHandler{}, "/bin/sh", "-c", `for i in 1 2 3 4 5 6 7 8; do (id -u >/dev/null; echo $i) & done | sort | tr -d '\n'; kill -TERM $$`)
	assert.Equal(t, "12345678", out)
	assert.Equal(t, 128+15, st)
}

func TestSessionCommandNotFound(t *testing.T) {
	_, err := exec.LookPath("/nonexistent-xyz")
	require.Error(t, err)
	_, st := run(t, getuidHandler{}, "/nonexistent-xyz")
	assert.Equal(t, 127, st)
}

// TestStartFailsOnABadFilter: the filter is compiled while the stub
// starts; a rule libseccomp refuses still fails Start with its error, and
// the stub started meanwhile is killed and reaped.
func TestStartFailsOnABadFilter(t *testing.T) {
	_, err := Start(Config{
		Path:    "/bin/true",
		Argv:    []string{"/bin/true"},
		Env:     os.Environ(),
		Handler: getuidHandler{},
		Events:  &hostExec{},
		Rules:   []Rule{{Nr: -1, Action: ActNotify}},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "add filter rule for syscall -1")
	var ws unix.WaitStatus
	_, werr := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
	assert.Equal(t, unix.ECHILD, werr, "no child left behind")
}

// TestQuietStops: after a session starts, the supervisor's SIGCHLD action
// has SA_NOCLDSTOP (a tracee's ptrace stops send it no signal), and the Go
// runtime's handler is still the one installed.
func TestQuietStops(t *testing.T) {
	var before, after kernelSigaction
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0, uintptr(unsafe.Pointer(&before)), unsafe.Sizeof(before.mask), 0, 0)
	require.Zero(t, e)
	require.NotEqual(t, uintptr(sigDfl), before.handler, "the runtime handles SIGCHLD")
	require.NoError(t, quietStops())
	_, _, e = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0, uintptr(unsafe.Pointer(&after)), unsafe.Sizeof(after.mask), 0, 0)
	require.Zero(t, e)
	assert.NotZero(t, after.flags&saNoCldStop, "SA_NOCLDSTOP")
	assert.Equal(t, before.handler, after.handler)
	assert.Equal(t, before.flags|saNoCldStop, after.flags)
	assert.Equal(t, before.mask, after.mask)
}
