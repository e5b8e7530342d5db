package bench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// syscallOps are the intercepted calls BenchmarkSupervisorSyscalls counts.
var syscallOps = []string{"access", "stat", "statat", "statx", "open", "create", "unlink", "link", "mkdir", "rmdir"}

// BenchmarkSupervisorSyscalls counts the system calls txexec's supervisor
// makes per intercepted call of each kind in a transaction (and, with
// TXEXEC_BENCH_BASE, the base build's): the work behind a call, which on
// this VM costs about as much per system call as a native stat.
//
// perf records raw_syscalls:sys_enter system-wide while the fixture runs
// a few calls, then again while it runs 2048 more; the difference of the
// system calls made by processes named txexec*, over the difference of the
// calls txexec trapped (TXEXEC_STATS trapped_calls), leaves out start-up
// and commit. Paired operations count their untimed halves too (create's
// unlink), as trapped calls. Needs perf and root; skipped otherwise.
//
// Two metrics: syscalls/call counts every one; handler-syscalls/call
// leaves out the seccomp listener's ioctls and the Go runtime's own calls
// (futex, nanosleep, ...), whose number depends on how the threads were
// scheduled, and so counts what the handlers do, the same from run to run.
//
// It measures optimizations (bench/compare.sh BEFORE AFTER OUT TITLE DESC
// 'SupervisorSyscalls/' 1); make bench's rounds skip it.
func BenchmarkSupervisorSyscalls(b *testing.B) {
	perf, err := exec.LookPath("perf")
	if err != nil || os.Geteuid() != 0 {
		b.Skip("bench: needs perf and root")
	}
	bin := BuildPercall(b)
	builds := []struct{ mode, txexec string }{{"tx", txexecBinary(b)}}
	if base := os.Getenv(BaseEnv); base != "" {
		builds = append(builds, struct{ mode, txexec string }{"tx-base", base})
	}
	for _, op := range syscallOps {
		b.Run(op, func(b *testing.B) {
			for _, bd := range builds {
				b.Run(bd.mode, func(b *testing.B) {
					c0 := countSupervisor(b, perf, bd.txexec, bin, op, 64)
					c1 := countSupervisor(b, perf, bd.txexec, bin, op, 64+2048)
					calls := float64(c1.trapped - c0.trapped)
					if calls <= 0 {
						b.Fatalf("bench: %s trapped %d calls, then %d", op, c0.trapped, c1.trapped)
					}
					b.ReportMetric(float64(c1.all-c0.all)/calls, "syscalls/call")
					b.ReportMetric(float64(c1.handler-c0.handler)/calls, "handler-syscalls/call")
				})
			}
		})
	}
}

// notHandlers are the system calls of the supervisor that no handler
// makes: the seccomp listener's ioctls and the Go runtime's.
var notHandlers = map[int]bool{
	unix.SYS_IOCTL: true, unix.SYS_FUTEX: true, unix.SYS_NANOSLEEP: true, unix.SYS_CLOCK_NANOSLEEP: true,
	unix.SYS_SCHED_YIELD: true, unix.SYS_EPOLL_PWAIT: true, unix.SYS_EPOLL_WAIT: true, unix.SYS_EPOLL_CTL: true,
	unix.SYS_MADVISE: true, unix.SYS_MMAP: true, unix.SYS_MUNMAP: true, unix.SYS_RT_SIGRETURN: true,
	unix.SYS_TGKILL: true, unix.SYS_GETPID: true, unix.SYS_GETTID: true, unix.SYS_SIGALTSTACK: true,
}

// supervisorCount is what countSupervisor counted.
type supervisorCount struct {
	all, handler, trapped int
}

// countSupervisor runs the fixture's op n times in a transaction of
// txexec under perf, and returns the system calls processes named txexec*
// made (all, and those not in notHandlers) and the calls txexec trapped.
func countSupervisor(tb testing.TB, perf, txexec, bin, op string, n int) supervisorCount {
	tb.Helper()
	dir := WorkDir(tb)
	tmp := tb.TempDir()
	data, stats := filepath.Join(tmp, "perf.data"), filepath.Join(tmp, "stats")
	// -N: no build-id cache, whose hard links into ~/.debug change the
	// ctime of every binary perf sees (a conflict for any transaction
	// running meanwhile that read one).
	argv := append(append([]string{"record", "-N", "-q", "-e", "raw_syscalls:sys_enter", "-a", "-o", data, "--"},
		served(txexec)...), PercallArgs(bin, op, dir, n)...)
	cmd := exec.Command(perf, argv...)
	cmd.Env = append(os.Environ(), "TXEXEC_STATS="+stats, "TXEXEC_STATE_DIR="+filepath.Join(tmp, "state"))
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("bench: perf record %s: %v\n%s", op, err, out)
	}
	out, err := exec.Command(perf, "script", "-i", data, "-F", "comm,trace").Output()
	if err != nil {
		tb.Fatalf("bench: perf script: %v", err)
	}
	// Lines are "COMM NR 16 (args)".
	var c supervisorCount
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || !strings.HasPrefix(f[0], "txexec") || f[1] != "NR" {
			continue
		}
		nr, err := strconv.Atoi(f[2])
		if err != nil {
			tb.Fatalf("bench: perf script line %q", sc.Text())
		}
		c.all++
		if !notHandlers[nr] {
			c.handler++
		}
	}
	st, err := readStats(stats)
	if err != nil {
		tb.Fatalf("bench: %v", err)
	}
	trapped, ok := st["trapped_calls"]
	if !ok {
		tb.Fatalf("bench: %s has no trapped_calls", stats)
	}
	c.trapped = int(trapped)
	return c
}
