package interpose

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// heldHandler answers getuid with 4242 after checking, as path calls do,
// that the call is still pending (answering the error if not); it holds
// the first call until released, handing it to the test meanwhile.
type heldHandler struct {
	first   chan *Call
	release chan struct{}
	held    atomic.Bool
}

func (h *heldHandler) Handle(c *Call) Reply {
	if c.Nr != unix.SYS_GETUID {
		return Continue()
	}
	if h.held.CompareAndSwap(false, true) {
		h.first <- c
		<-h.release
	}
	if err := c.Valid(); err != nil {
		return FromError(err)
	}
	return Return(4242)
}

// TestValidOfALiveCallerUnderSignals: NOTIF_ID_VALID (Call.Valid) takes
// the listener's lock interruptibly, so when it is contended a signal to
// the checking thread (Go's preemption SIGURG, SIGCHLD from ptrace stops)
// makes the ioctl fail with EINTR. That must not read as "the caller is
// gone": path calls answered ESRCH to live callers. Several threads check
// one pending call at once, and are sent signals all the while; and the
// call's reply still arrives.
func TestValidOfALiveCallerUnderSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	h := &heldHandler{first: make(chan *Call, 1), release: make(chan struct{})}
	s, err := Start(Config{
		Path:    exe,
		Argv:    []string{exe},
		Env:     append(os.Environ(), getuidLoopEnv+"=1"),
		Files:   [3]*os.File{os.Stdin, w, os.Stderr},
		Handler: h,
		Events:  &hostExec{},
		Workers: 16,
		Rules: allowRest([]Rule{
			{Nr: unix.SYS_EXECVE, Action: ActTrace}, {Nr: unix.SYS_EXECVEAT, Action: ActTrace},
			{Nr: unix.SYS_GETUID, Action: ActNotify},
		}),
	})
	require.NoError(t, err)
	w.Close()
	c := <-h.first

	var checks, failures atomic.Int64
	var firstErr atomic.Value
	var tids sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid := unix.Gettid()
			tids.Store(tid, true)
			defer tids.Delete(tid)
			for {
				select {
				case <-stop:
					return
				default:
				}
				checks.Add(1)
				if err := c.Valid(); err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	signaller := make(chan struct{})
	go func() {
		defer close(signaller)
		for {
			select {
			case <-stop:
				return
			default:
			}
			tids.Range(func(k, _ any) bool {
				unix.Tgkill(os.Getpid(), k.(int), unix.SIGURG)
				return true
			})
			s.lst.mu.Lock()
			for tid := range s.lst.tids {
				unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
			}
			s.lst.mu.Unlock()
			time.Sleep(5 * time.Microsecond)
		}
	}()
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()
	<-signaller
	close(h.release)
	var out bytes.Buffer
	_, _ = out.ReadFrom(r)
	ws, err := s.Wait()
	require.NoError(t, err)
	t.Logf("%d checks; listener ioctls interrupted and made again: %d", checks.Load(), interruptedIoctls.Load())
	assert.Zero(t, failures.Load(), "Valid failed for a pending call: %v", firstErr.Load())
	assert.Equal(t, "wrong answers: 0\n", out.String())
	assert.Equal(t, 0, ExitStatus(ws))
}

// getuidLoopEnv makes the test binary run getuidLoop instead of the tests
// (see TestMain): the tracee of TestValidOfALiveCallerUnderSignals, whose
// calls keep the listener busy.
const getuidLoopEnv = "TXEXEC_TEST_GETUID_LOOP"

// getuidLoop calls getuid from several threads at once for a few seconds
// and prints how many answers were not the handler's 4242 (a failure,
// -errno, included).
func getuidLoop() {
	var wrong atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(6 * time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				if uid, _, _ := unix.RawSyscall(unix.SYS_GETUID, 0, 0, 0); uid != 4242 {
					wrong.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("wrong answers: %d\n", wrong.Load())
}

// TestRetryInterrupted: a listener ioctl interrupted (EINTR) is made again;
// any other result is returned.
func TestRetryInterrupted(t *testing.T) {
	results := []unix.Errno{unix.EINTR, unix.EINTR, unix.ENOENT}
	calls := 0
	e := retryInterrupted(func() unix.Errno { calls++; return results[calls-1] })
	assert.Equal(t, unix.ENOENT, e)
	assert.Equal(t, 3, calls)
	calls = 0
	assert.Equal(t, unix.Errno(0), retryInterrupted(func() unix.Errno { calls++; return 0 }))
	assert.Equal(t, 1, calls)
}

// TestValidFailureIsNotESRCH: only "not pending" (ENOENT) means the caller
// is gone; a failure of the check itself is an internal error, which is
// never answered as ESRCH.
func TestValidFailureIsNotESRCH(t *testing.T) {
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	c := &Call{ID: 1, listener: &listener{fd: int(f.Fd())}}
	err = c.Valid()
	require.Error(t, err)
	var e unix.Errno
	assert.False(t, errors.As(err, &e), "an internal error, not an errno: %v", err)
	assert.Contains(t, err.Error(), "check that the call")
}
