package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"txexec/bench/floor"
	"txexec/interpose"
)

func TestMain(m *testing.M) {
	// The in-process benchmarks re-execute this test binary as the stub.
	interpose.RunStubIfRequested()
	unmount, err := MountTmpfs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: no private tmpfs, working in %s: %v\n", os.TempDir(), err)
	}
	code := m.Run()
	unmount()
	if txexecDir != "" {
		os.RemoveAll(txexecDir)
	}
	for _, d := range onceDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// minCalls is the fewest timed calls of one fixture run: the framework's
// first probe run (b.N = 1) still gives a plausible number.
const minCalls = 256

// ioScale multiplies b.N for read and write, which cost about a
// microsecond each: enough calls that a run is not over before the
// machine's noise averages out.
const ioScale = 50

// procScale divides b.N for fork, exec and spawn, which cost a few hundred
// microseconds each.
const procScale = 4

// calls is the number of timed calls of op for b.N.
func calls(op string, n int) int {
	switch op {
	case "read", "write":
		return max(n, minCalls) * ioScale
	case "fork", "exec", "spawn":
		return max(n/procScale, minCalls)
	}
	return max(n, minCalls)
}

// BinEnv names a txexec binary to benchmark instead of building
// ./cmd/txexec; BaseEnv names a second one (an older build) measured in the
// same run as the "passthrough-base" and "tx-base" modes, so an
// optimization's effect is a ratio of two numbers taken side by side.
const (
	BinEnv  = "TXEXEC_BENCH_BIN"
	BaseEnv = "TXEXEC_BENCH_BASE"
)

// served is bin's command line before "--" with opts and every trapped
// call served by the supervisor: the fast path for read-only lookups is
// the default, and these benchmarks measure the calls it would take off
// the supervisor. A base build from before that default knows no
// --no-fast-lookups, and has the fast path off.
func served(bin string, opts ...string) []string {
	argv := append([]string{bin}, opts...)
	knows, _ := knowsNoFast.LoadOrStore(bin, sync.OnceValue(func() bool {
		return exec.Command(bin, "--no-fast-lookups", "--passthrough", "--", "true").Run() == nil
	}))
	if knows.(func() bool)() {
		argv = append(argv, "--no-fast-lookups")
	}
	return append(argv, "--")
}

var knowsNoFast sync.Map // binary path -> func() bool

var (
	txexecOnce sync.Once
	txexecBin  string
	txexecErr  error
	txexecDir  string
)

// txexecBinary returns the txexec binary under test, built once per test
// process into a temporary directory unless BinEnv names one.
func txexecBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(BinEnv); p != "" {
		return p
	}
	txexecOnce.Do(func() {
		txexecDir, txexecErr = os.MkdirTemp("", "txexec-bench-bin-")
		if txexecErr != nil {
			return
		}
		txexecBin = filepath.Join(txexecDir, "txexec")
		out, err := exec.Command("go", "build", "-o", txexecBin, "txexec/cmd/txexec").CombinedOutput()
		if err != nil {
			txexecErr = &buildError{err: err, out: out}
		}
	})
	if txexecErr != nil {
		tb.Fatalf("bench: build txexec: %v", txexecErr)
	}
	return txexecBin
}

var (
	floorOnce sync.Once
	floorBin  string
	tinyOnce  sync.Once
	tinyBin   string
)

// tinyBinary builds the exec operation's program once per test process.
func tinyBinary(tb testing.TB) string {
	tinyOnce.Do(func() { tinyBin = BuildTiny(&onceTB{tb}) })
	if tinyBin == "" {
		tb.Fatal("bench: could not build the tiny program")
	}
	return tinyBin
}

// floorBinary builds bench/floor's C supervisor once per test process.
func floorBinary(tb testing.TB) string {
	floorOnce.Do(func() { floorBin = floor.Build(&onceTB{tb}) })
	if floorBin == "" {
		tb.Fatal("bench: could not build the floor program")
	}
	return floorBin
}

// onceTB lends a build made once per process a temporary directory that
// outlives the benchmark that happened to make it (removed by TestMain).
type onceTB struct{ testing.TB }

func (o *onceTB) TempDir() string {
	d, err := os.MkdirTemp("", "txexec-bench-floor-")
	if err != nil {
		o.Fatalf("bench: %v", err)
	}
	onceDirs = append(onceDirs, d)
	return d
}

// onceDirs are the temporary directories of builds made once per process.
var onceDirs []string

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// mode is one way of running the fixture.
type mode struct {
	name string
	// prefix is the command line before the fixture's ("" = native).
	prefix func(tb testing.TB) []string
	// args are added to the fixture's.
	args []string
	// floorArgs, if set, make the mode a run of bench/floor's C
	// supervisor on the work directory's file instead of the fixture.
	floorArgs []string
	// parent, if set, is where the work directory is made instead of
	// ParentDir().
	parent string
	// otherUser runs the fixture as nobody (setpriv after txexec's "--"),
	// so that the supervisor switches to the caller's credentials for
	// every call, as it does for a maintainer script or man-db's trigger.
	otherUser bool
}

// asNobody is the command line that runs the rest as uid and gid 65534
// with no supplementary groups.
var asNobody = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}

// modes are the ways op is run: natively, under txexec with and without a
// transaction, and its floor next to them, so that the ratios compare
// numbers taken seconds apart: for stat the bare C supervisor emulating
// fstatat, for open the one installing the descriptor with ADDFD (both with
// SYNC_WAKE_UP), for the calls txexec does not intercept (read, write) the
// fixture natively under an allow-all seccomp filter.
func modes(op string) []mode {
	ms := []mode{
		{name: "native", prefix: func(testing.TB) []string { return nil }},
		{name: "passthrough", prefix: func(tb testing.TB) []string { return served(txexecBinary(tb), "--passthrough") }},
		{name: "tx", prefix: func(tb testing.TB) []string { return served(txexecBinary(tb)) }},
	}
	switch op {
	case "read", "write":
		ms = append(ms, mode{name: "filtered", prefix: func(testing.TB) []string { return nil }, args: []string{"-F"}})
	case "stat":
		ms = append(ms, mode{name: "floor", floorArgs: []string{"-s"}},
			mode{name: "passthrough-other-user", otherUser: true,
				prefix: func(tb testing.TB) []string {
					return append(served(txexecBinary(tb), "--passthrough"), asNobody...)
				}},
			mode{name: "tx-other-user", otherUser: true,
				prefix: func(tb testing.TB) []string { return append(served(txexecBinary(tb)), asNobody...) }})
		if base := os.Getenv(BaseEnv); base != "" {
			ms = append(ms, mode{name: "passthrough-other-user-base", otherUser: true,
				prefix: func(testing.TB) []string { return append(served(base, "--passthrough"), asNobody...) }})
		}
	case "open":
		ms = append(ms, mode{name: "floor", floorArgs: []string{"-s", "-o"}})
	case "create":
		// What the same creates cost natively on the disk of TMPDIR, to
		// show why the benchmarks work on a tmpfs.
		ms = append(ms, mode{name: "native-tmpdir", prefix: func(testing.TB) []string { return nil }, parent: os.TempDir()})
	}
	if base := os.Getenv(BaseEnv); base != "" {
		ms = append(ms,
			mode{name: "passthrough-base", prefix: func(testing.TB) []string { return served(base, "--passthrough") }},
			mode{name: "tx-base", prefix: func(testing.TB) []string { return served(base) }})
	}
	return ms
}

// runFixture runs one fixture command line in a fresh work directory with
// a fresh state directory and returns its ns/call.
func runFixture(tb testing.TB, m mode, bin, op string, n int) float64 {
	tb.Helper()
	parent := m.parent
	if parent == "" {
		parent = ParentDir()
	}
	dir := WorkDirIn(tb, parent)
	if m.floorArgs != nil {
		ns, err := floor.Run(floorBinary(tb), append([]string{"-n", strconv.Itoa(n), "-f", filepath.Join(dir, "file")}, m.floorArgs...)...)
		if err != nil {
			tb.Fatal(err)
		}
		return ns
	}
	if m.otherUser {
		// The fixture and its file must be reachable by nobody: a copy
		// of the fixture in the work directory, opened to everyone.
		b, err := os.ReadFile(bin)
		if err == nil {
			bin = filepath.Join(dir, "percall")
			err = os.WriteFile(bin, b, 0o755)
		}
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			tb.Fatalf("bench: %v", err)
		}
	}
	argv := append(append(m.prefix(tb), PercallArgs(bin, op, dir, n)...), m.args...)
	if op == "exec" || op == "spawn" {
		argv = append(argv, "-x", tinyBinary(tb))
	}
	cmd, _ := StateCommand(tb, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("bench: %s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	ns, err := ParseNsPerCall(stdout.Bytes())
	if err != nil {
		tb.Fatalf("%v (stderr: %s)", err, stderr.String())
	}
	return ns
}

// BenchmarkPerCall times b.N calls (read and write: ioScale×b.N) of each
// fixture operation natively, under `txexec --passthrough --` and under
// `txexec --` (in a transaction that commits when the fixture exits). The
// fixture times the calls itself after 256 untimed warm-up calls of the
// same kind, so process start-up, the first lookups of the directory and
// the commit are not counted. ns/op and ns/call are both the fixture's time
// per call.
func BenchmarkPerCall(b *testing.B) {
	bin := BuildPercall(b)
	for _, op := range Ops {
		b.Run(op, func(b *testing.B) {
			for _, m := range modes(op) {
				b.Run(m.name, func(b *testing.B) {
					ns := runFixture(b, m, bin, op, calls(op, b.N))
					b.ReportMetric(ns, "ns/op")
					b.ReportMetric(ns, "ns/call")
				})
			}
		})
	}
}

// BenchmarkFloor runs bench/floor's bare C supervisor on the fixture's
// file in the same run: a native fstatat, and fstatat trapped by
// SECCOMP_RET_USER_NOTIF and emulated (process_vm_readv, fstatat,
// process_vm_writev, reply) with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
// unpinned and with both processes pinned to CPU 0; and open+close with
// openat trapped and answered by installing the supervisor's descriptor
// (ADDFD with SEND), the floor of every open txexec serves.
func BenchmarkFloor(b *testing.B) {
	bin := floor.Build(b)
	for _, m := range []struct {
		name string
		args []string
	}{
		{"native", []string{"-m"}},
		{"syncwake", []string{"-s"}},
		{"syncwake-pinned", []string{"-s", "-p"}},
		{"open-syncwake", []string{"-s", "-o"}},
		{"open-syncwake-pinned", []string{"-s", "-o", "-p"}},
	} {
		b.Run(m.name, func(b *testing.B) {
			dir := WorkDir(b)
			args := append([]string{"-n", strconv.Itoa(max(b.N, minCalls)), "-f", filepath.Join(dir, "file")}, m.args...)
			ns, err := floor.Run(bin, args...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(ns, "ns/op")
			b.ReportMetric(ns, "ns/call")
		})
	}
}
