// Package bench holds txexec's benchmarks: the per-call table (percall.c run
// natively, under `txexec --passthrough --` and under `txexec --`, next to
// the bare C seccomp-notify floor of bench/floor, all in one run), the same
// stat loop with CPU work between calls (BenchmarkFloorGap), the workloads,
// and an in-process variant of the per-call runs for pprof. `make bench`
// runs them and bench/report turns their output into docs/performance.md.
//
// Everything a benchmark writes lives in temporary directories: the files
// the fixture works on, txexec's state directory (TXEXEC_STATE_DIR), the
// compiled fixture and txexec binary. By default those directories are made
// on a tmpfs mounted for the run (MountTmpfs) so that the numbers are the
// cost of the system-call path and not of this machine's disk;
// TXEXEC_BENCH_DIR chooses another
// parent directory (for example one on ext4). BenchmarkCommit2000, the
// workloads (BenchmarkWorkload) and the example mail server
// (BenchmarkInProgramServer) work under /var/tmp instead: the disk file
// system is part of what they measure.
package bench

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

//go:embed percall.c
var percallSource []byte

// Ops are the fixture's operations, in the order of the per-call table,
// then fork and exec, the unit costs of docs/performance.md's accounting
// of the workloads.
var Ops = []string{"access", "stat", "statat", "open", "create", "unlink", "link", "mkdir", "rmdir", "read", "write", "listdir", "fork", "exec"}

// DirEnv names the parent directory of the benchmarks' temporary
// directories; without it they are made on a tmpfs that TestMain mounts
// for the run (MountTmpfs), or in os.TempDir() if it could not.
//
// Not /dev/shm, the usual tmpfs: /dev is passed through by transactions
// (docs/semantics.md), so a call there is served on the host and never
// reaches the transaction's view that the "tx" rows are about.
const DirEnv = "TXEXEC_BENCH_DIR"

// tmpfsDir is the tmpfs MountTmpfs mounted ("" if none).
var tmpfsDir string

// MountTmpfs mounts a private tmpfs under /var/tmp for the benchmarks'
// temporary directories, unless DirEnv chooses one, and returns what
// unmounts and removes it. Without the privilege to mount, ParentDir falls
// back to os.TempDir() and the reason is returned.
func MountTmpfs() (cleanup func(), err error) {
	if os.Getenv(DirEnv) != "" {
		return func() {}, nil
	}
	d, err := os.MkdirTemp("/var/tmp", "txexec-bench-tmpfs-")
	if err != nil {
		return func() {}, err
	}
	if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=4g,mode=0755"); err != nil {
		os.Remove(d)
		return func() {}, fmt.Errorf("mount tmpfs on %s: %w", d, err)
	}
	tmpfsDir = d
	return func() {
		unix.Unmount(d, unix.MNT_DETACH)
		os.Remove(d)
		tmpfsDir = ""
	}, nil
}

// FileSize is the size of the fixture's DIR/file (percall.c FILESIZE).
const FileSize = 1 << 20

// ListdirEntries is how many empty files the fixture's DIR/many holds,
// for the listdir operation.
const ListdirEntries = 1000

// ParentDir returns the directory the benchmarks make their temporary
// directories in: $TXEXEC_BENCH_DIR, else the tmpfs of MountTmpfs, else
// os.TempDir().
func ParentDir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	if tmpfsDir != "" {
		return tmpfsDir
	}
	return os.TempDir()
}

// TempDir makes a temporary directory under ParentDir, removed when tb ends.
func TempDir(tb testing.TB, pattern string) string {
	tb.Helper()
	return tempDirIn(tb, ParentDir(), pattern)
}

func tempDirIn(tb testing.TB, parent, pattern string) string {
	tb.Helper()
	d, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		tb.Fatalf("bench: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// BuildPercall compiles percall.c with "cc -O2" into a temporary directory
// and returns the binary's path. Without a C compiler the benchmark is
// skipped, unless CI=true.
func BuildPercall(tb testing.TB) string {
	tb.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		testenv.SkipOrFail(tb, "bench: no C compiler (cc) in PATH, cannot build percall.c: %v", err)
	}
	dir := tb.TempDir()
	src := filepath.Join(dir, "percall.c")
	if err := os.WriteFile(src, percallSource, 0o644); err != nil {
		tb.Fatalf("bench: %v", err)
	}
	bin := filepath.Join(dir, "percall")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-o", bin, src).CombinedOutput(); err != nil {
		tb.Fatalf("bench: %s -O2 percall.c: %v\n%s", cc, err, out)
	}
	return bin
}

// tinySource is the program the fixture's exec operation executes: static,
// without libc, it only exits, so that the exec is the only call the
// supervisor sees of it.
const tinySource = `void _start(void) {
	__asm__ volatile("mov $231, %eax\n\txor %edi, %edi\n\tsyscall"); /* exit_group(0) */
	for (;;)
		;
}
`

// BuildTiny compiles tinySource with "cc -static -nostdlib" into a
// temporary directory and returns the binary's path.
func BuildTiny(tb testing.TB) string {
	tb.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		testenv.SkipOrFail(tb, "bench: no C compiler (cc) in PATH, cannot build the tiny program: %v", err)
	}
	dir := tb.TempDir()
	src := filepath.Join(dir, "tiny.c")
	if err := os.WriteFile(src, []byte(tinySource), 0o644); err != nil {
		tb.Fatalf("bench: %v", err)
	}
	bin := filepath.Join(dir, "tiny")
	if out, err := exec.Command(cc, "-O2", "-static", "-nostdlib", "-o", bin, src).CombinedOutput(); err != nil {
		tb.Fatalf("bench: %s -static -nostdlib tiny.c: %v\n%s", cc, err, out)
	}
	return bin
}

// WorkDir makes the directory one fixture run works in, with DIR/file, an
// unmodified FileSize-byte host file.
func WorkDir(tb testing.TB) string {
	tb.Helper()
	return WorkDirIn(tb, ParentDir())
}

// StateCommand is argv as a command with a state directory of its own
// (TXEXEC_STATE_DIR, removed with tb's temporary files), so that no two
// runs share a store; it returns the directory too.
func StateCommand(tb testing.TB, argv ...string) (*exec.Cmd, string) {
	tb.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	state := TempDir(tb, "txexec-bench-state-")
	cmd.Env = append(os.Environ(), "TXEXEC_STATE_DIR="+state)
	return cmd, state
}

// WorkDirIn is WorkDir under parent instead of ParentDir().
func WorkDirIn(tb testing.TB, parent string) string {
	tb.Helper()
	d := tempDirIn(tb, parent, "txexec-bench-")
	if err := os.WriteFile(filepath.Join(d, "file"), bytes.Repeat([]byte{'t'}, FileSize), 0o644); err != nil {
		tb.Fatalf("bench: %v", err)
	}
	if err := os.Mkdir(filepath.Join(d, "many"), 0o755); err != nil {
		tb.Fatalf("bench: %v", err)
	}
	for i := range ListdirEntries {
		if err := os.WriteFile(filepath.Join(d, "many", fmt.Sprintf("entry-%04d", i)), nil, 0o644); err != nil {
			tb.Fatalf("bench: %v", err)
		}
	}
	return d
}

// PercallArgs is the fixture's command line for n timed calls of op in dir.
func PercallArgs(bin, op, dir string, n int) []string {
	return []string{bin, "-o", op, "-d", dir, "-n", strconv.Itoa(n)}
}

// ParseNsPerCall extracts the value of the fixture's one output line,
// "ns_per_call=<float>".
func ParseNsPerCall(out []byte) (float64, error) {
	s := strings.TrimSpace(string(out))
	v, ok := strings.CutPrefix(s, "ns_per_call=")
	if !ok || strings.ContainsAny(v, "\n ") {
		return 0, fmt.Errorf("bench: unexpected fixture output %q", s)
	}
	ns, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("bench: unexpected fixture output %q: %w", s, err)
	}
	if !(ns > 0) {
		return 0, errors.New("bench: non-positive ns_per_call " + v)
	}
	return ns, nil
}
