package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A SwitchCounter counts the context switches and CPU migrations of a
// command's whole process tree, threads included. It opens the kernel's
// software counters that `perf stat -e context-switches,cpu-migrations`
// reads (perf_event_open(2): PERF_COUNT_SW_CONTEXT_SWITCHES and
// PERF_COUNT_SW_CPU_MIGRATIONS, inherited by every child and thread,
// enabled when the command execs), itself rather than through the perf
// program, whose start-up would add tens of milliseconds to every timed
// run. Where the kernel refuses (no perf events, or not permitted), the
// switches come from the rusage wait4 returns (voluntary and involuntary
// switches of the command and of the descendants it waited for), and
// migrations are not counted.
type SwitchCounter struct {
	// Why says why perf events are not used ("" when they are).
	Why string
}

// SwitchCounts are the counts of one run; NaN when not counted.
type SwitchCounts struct {
	Switches, Migrations float64
}

var (
	switchesOnce sync.Once
	switches     SwitchCounter
)

// Switches returns how this machine counts: perf events if the kernel
// lets this process open them.
func Switches() SwitchCounter {
	switchesOnce.Do(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		fds, err := openTreeEvents()
		if err != nil {
			switches.Why = err.Error()
			return
		}
		closeAll(fds)
	})
	return switches
}

// Describe is what a benchmark prints of the counter, in the "key: value"
// form of go test's header lines, for bench/report.
func (s SwitchCounter) Describe() string {
	if s.Why == "" {
		return "switch-counter: perf events"
	}
	return "switch-counter: getrusage (" + strings.ReplaceAll(s.Why, "\n", " ") + ")"
}

// treeEvents are the counters Run opens, in SwitchCounts' order.
var treeEvents = []struct {
	name   string
	config uint64
}{
	{"context-switches", unix.PERF_COUNT_SW_CONTEXT_SWITCHES},
	{"cpu-migrations", unix.PERF_COUNT_SW_CPU_MIGRATIONS},
}

// openTreeEvents opens treeEvents on the calling thread, disabled until
// the thread's children exec and inherited by all their descendants.
// The caller must have locked its OS thread.
func openTreeEvents() ([]int, error) {
	var fds []int
	for _, e := range treeEvents {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: e.config,
			Bits:   unix.PerfBitDisabled | unix.PerfBitInherit | unix.PerfBitEnableOnExec,
		}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, 0 /* this thread */, -1 /* any CPU */, -1 /* no group */, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("perf_event_open(%s): %w", e.name, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// Run runs cmd (not started) and returns the counts of its tree and what
// cmd.Run returned, or an error without running it when the counters the
// machine had could not be opened.
func (s SwitchCounter) Run(cmd *exec.Cmd) (SwitchCounts, error) {
	if s.Why == "" {
		// The counters follow the children of this thread: cmd must
		// be started from it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		fds, err := openTreeEvents()
		if err != nil {
			return SwitchCounts{}, fmt.Errorf("bench: %w (it could be opened before)", err)
		}
		defer closeAll(fds)
		err = cmd.Run()
		return SwitchCounts{Switches: readCount(fds[0]), Migrations: readCount(fds[1])}, err
	}
	err := cmd.Run()
	c := SwitchCounts{Switches: math.NaN(), Migrations: math.NaN()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			c.Switches = float64(ru.Nvcsw + ru.Nivcsw)
		}
	}
	return c, err
}

// readCount reads an inherited counter: its own count (none: it stayed
// disabled on this thread) and those of every exited child.
func readCount(fd int) float64 {
	var b [8]byte
	if n, err := unix.Read(fd, b[:]); err != nil || n != len(b) {
		return math.NaN()
	}
	return float64(binary.NativeEndian.Uint64(b[:]))
}
