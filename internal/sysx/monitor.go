package sysx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrNoMonitor says that no thread of the process was found waiting in
// the runtime's monitor: it may have been running at that moment.
var ErrNoMonitor = errors.New("the Go runtime's monitor thread was not found waiting")

// monitorFunc is the function the Go runtime's monitor thread runs for
// ever (proc.go, started by runtime.main before any package's init).
const monitorFunc = "runtime.sysmon"

// monitorStackScan is how many bytes above a waiting thread's stack
// pointer are searched for a return address into monitorFunc: its waits
// (usleep, or notetsleep's futex when every P is idle) are a few frames
// deep.
const monitorStackScan = 2048

// BatchRuntimeMonitor puts the Go runtime's monitor thread (sysmon) in
// the SCHED_BATCH scheduling class, its niceness kept, and returns its
// thread ID.
//
// sysmon wakes every 20 µs to 10 ms, more often the more often it has just
// taken a P from a thread in a system call, which a supervisor whose
// threads wait in system calls gives it every reason to do. Each wake-up
// on a CPU that runs a traced program preempted that program (the kernel
// lets a thread that has just woken preempt the running one): in the
// parallel C build under txexec, half of the compilers' context switches.
// A SCHED_BATCH thread never preempts at its wake-up (kernel/sched/fair.c,
// check_preempt_wakeup_fair); it runs at once on an idle CPU and at the
// running thread's next tick on a busy one, which is all sysmon's work
// needs (taking Ps from long system calls, preempting long-running
// goroutines, forced collections).
//
// A thread inherits its creator's class, and sysmon sometimes starts a
// thread for the Go scheduler: UnbatchThread puts one back. A monitor in
// another class than SCHED_NORMAL (the process was started in it, chrt -b
// txexec …) is left alone, and so are the threads.
//
// The thread is recognised by what it waits in: a thread whose
// /proc/self/task/TID/syscall shows it in a system call (or between two)
// with a return address into runtime.sysmon just above its stack pointer.
// ErrNoMonitor if none is (sysmon was running): the caller may try again.
func BatchRuntimeMonitor() (int, error) {
	tid, err := runtimeMonitor()
	if err != nil {
		return 0, err
	}
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, fmt.Errorf("sched_getattr of thread %d: %w", tid, err)
	}
	if attr.Policy != unix.SCHED_NORMAL {
		return tid, nil
	}
	monitorBatched.Store(true)
	if err := setFairPolicy(tid, unix.SCHED_BATCH); err != nil {
		return 0, fmt.Errorf("thread %d: %w", tid, err)
	}
	return tid, nil
}

// monitorBatched says that BatchRuntimeMonitor moved the monitor from
// SCHED_NORMAL to SCHED_BATCH: a thread in SCHED_BATCH may have inherited
// it from there.
var monitorBatched atomic.Bool

// UnbatchThread puts the calling thread back in the SCHED_NORMAL class if
// it is in SCHED_BATCH since BatchRuntimeMonitor moved the monitor there:
// a thread sysmon started inherits its class. The supervisor's
// latency-bound threads (the notification workers, the tracer) call it
// once they are locked to their thread.
func UnbatchThread() error {
	if !monitorBatched.Load() {
		return nil
	}
	self, err := unix.SchedGetAttr(0, 0)
	if err != nil || self.Policy != unix.SCHED_BATCH {
		return err
	}
	return setFairPolicy(0, unix.SCHED_NORMAL)
}

// setFairPolicy sets thread tid's class to policy (SCHED_NORMAL or
// SCHED_BATCH), keeping its niceness: neither change needs a privilege.
func setFairPolicy(tid int, policy uint32) error {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return fmt.Errorf("sched_getattr: %w", err)
	}
	attr.Policy = policy
	// Only reset-on-fork is kept: without the flags that ask for them,
	// the utilisation clamps sched_getattr reports are left as they are.
	attr.Flags &= unix.SCHED_FLAG_RESET_ON_FORK
	if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
		return fmt.Errorf("sched_setattr: %w", err)
	}
	return nil
}

// runtimeMonitor returns the thread ID of the Go runtime's monitor thread.
func runtimeMonitor() (int, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, err
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return 0, err
	}
	defer mem.Close()
	buf := make([]byte, monitorStackScan)
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		sp, ok := waitingStackPointer(tid)
		if !ok {
			continue
		}
		n, err := mem.ReadAt(buf, int64(sp))
		if n == 0 && err != nil && err != io.EOF {
			continue
		}
		if returnsInto(buf[:n-n%8], monitorFunc) {
			return tid, nil
		}
	}
	return 0, ErrNoMonitor
}

// waitingStackPointer returns the user stack pointer of thread tid of this
// process if it is not on a CPU: /proc/self/task/TID/syscall is "NR ARGS…
// SP PC" in a system call, "-1 SP PC" between two, "running" on a CPU.
func waitingStackPointer(tid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, false
	}
	sp, err := strconv.ParseUint(strings.TrimPrefix(f[len(f)-2], "0x"), 16, 64)
	return sp, err == nil && sp != 0
}

// returnsInto says whether a word of stack, read as a return address, lies
// in the function named fn.
func returnsInto(stack []byte, fn string) bool {
	for i := 0; i+8 <= len(stack); i += 8 {
		pc := binary.LittleEndian.Uint64(stack[i:])
		if f := runtime.FuncForPC(uintptr(pc)); f != nil && f.Name() == fn {
			return true
		}
	}
	return false
}
