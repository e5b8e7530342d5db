package sysx

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// batchMonitorSoon retries BatchRuntimeMonitor while the monitor happens
// to be on a CPU.
func batchMonitorSoon(t *testing.T) int {
	t.Helper()
	for range 200 {
		tid, err := BatchRuntimeMonitor()
		if err == nil {
			return tid
		}
		require.ErrorIs(t, err, ErrNoMonitor)
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the runtime's monitor thread was never found waiting")
	return 0
}

// TestBatchRuntimeMonitor: exactly one thread of the process returns into
// runtime.sysmon, it is neither the main thread nor the caller's, and it
// goes to SCHED_BATCH with its niceness kept, whether sysmon polls (the
// process busy) or sleeps until woken (every P idle).
func TestBatchRuntimeMonitor(t *testing.T) {
	busy := make(chan struct{})
	var stopped atomic.Bool
	go func() { // keeps a P running, so that sysmon polls
		close(busy)
		for !stopped.Load() {
		}
	}()
	<-busy
	before, err := unix.Getpriority(unix.PRIO_PROCESS, os.Getpid())
	require.NoError(t, err)
	tid := batchMonitorSoon(t)
	stopped.Store(true)
	assert.NotEqual(t, os.Getpid(), tid, "not the main thread")
	assert.NotEqual(t, unix.Gettid(), tid, "not the caller")
	attr, err := unix.SchedGetAttr(tid, 0)
	require.NoError(t, err)
	assert.Equal(t, uint32(unix.SCHED_BATCH), attr.Policy)
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	require.NoError(t, err)
	assert.Equal(t, before, prio, "the niceness is kept")
	t.Cleanup(func() { _ = setFairPolicy(tid, unix.SCHED_NORMAL) })
	// Only one thread has runtime.sysmon above its stack pointer.
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	matches := 0
	mem, err := os.Open("/proc/self/mem")
	require.NoError(t, err)
	defer mem.Close()
	for _, task := range tasks {
		id, _ := strconv.Atoi(task.Name())
		sp, ok := waitingStackPointer(id)
		if !ok {
			continue
		}
		buf := make([]byte, monitorStackScan)
		n, _ := mem.ReadAt(buf, int64(sp))
		if returnsInto(buf[:n-n%8], monitorFunc) {
			matches++
			assert.Equal(t, tid, id)
		}
	}
	assert.LessOrEqual(t, matches, 1, "one monitor thread")
	// Idle: sysmon sleeps until a thread leaves a system call; found too.
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, tid, batchMonitorSoon(t))
}

// TestReturnsInto: a stack word is taken for a return address only if it
// lies in the named function.
func TestReturnsInto(t *testing.T) {
	word := func(v uint64) []byte {
		b := make([]byte, 8)
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		return b
	}
	assert.False(t, returnsInto(word(0), monitorFunc))
	assert.False(t, returnsInto(word(0xdeadbeef), monitorFunc))
	assert.False(t, returnsInto([]byte{1, 2, 3}, monitorFunc), "a partial word is not read")
	pc, _, _, ok := runtime.Caller(0)
	require.True(t, ok)
	here := runtime.FuncForPC(pc).Name()
	assert.True(t, returnsInto(append(word(0), word(uint64(pc))...), here), "an address in %s", here)
	assert.False(t, returnsInto(word(uint64(pc)), monitorFunc))
}

// TestUnbatchThread: once the monitor is in SCHED_BATCH, a locked thread
// that inherited that class goes back to SCHED_NORMAL; while it is not
// (the process started in another class), the thread keeps its class.
func TestUnbatchThread(t *testing.T) {
	policyAfterUnbatch := func() uint32 {
		got := make(chan uint32)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			if err := setFairPolicy(0, unix.SCHED_BATCH); err != nil {
				got <- 99
				return
			}
			if err := UnbatchThread(); err != nil {
				got <- 98
				return
			}
			attr, err := unix.SchedGetAttr(0, 0)
			if err != nil {
				got <- 97
				return
			}
			got <- attr.Policy
		}()
		return <-got
	}
	was := monitorBatched.Load()
	t.Cleanup(func() { monitorBatched.Store(was) })
	monitorBatched.Store(false)
	assert.Equal(t, uint32(unix.SCHED_BATCH), policyAfterUnbatch(), "the monitor was not moved")
	tid := batchMonitorSoon(t)
	t.Cleanup(func() { _ = setFairPolicy(tid, unix.SCHED_NORMAL) })
	require.True(t, monitorBatched.Load())
	assert.Equal(t, uint32(unix.SCHED_NORMAL), policyAfterUnbatch())
}
