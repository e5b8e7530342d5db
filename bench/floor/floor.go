// Package floor measures the floor cost of a seccomp user-notification round
// trip with a bare C supervisor (notify_floor.c), so Go benchmarks can report
// it in the same run as txexec's own supervisor.
//
// The C program is embedded and compiled with the system C compiler at test
// time; see notify_floor.c for its flags:
//
//	-n N  iterations          -s  SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
//	-c    reply CONTINUE       -m  native fstatat, no filter
//	-p    pin both to CPU 0    -v  also SECCOMP_IOCTL_NOTIF_ID_VALID
//	-o    open+close (openat trapped, answered with ADDFD+SEND)
//	-b B  B iterations of a CPU loop after each call (the gap)
//	-f P  absolute path to stat (default "/")
//
// fastpath_floor.c is the experiment of docs/fastpath.md: a fast path for
// read-only lookups (an in-process agent reached by SIGSYS, by Syscall User
// Dispatch or by a rewritten call site) against the same floor, in one run;
// see BuildFastpath and RunFastpath.
package floor

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

	"txexec/internal/testenv"
)

//go:embed notify_floor.c
var source []byte

// Source returns the C source of the floor program.
func Source() []byte { return bytes.Clone(source) }

// Build compiles notify_floor.c with "cc -O2" into t.TempDir() and returns the
// binary's path. Without a C compiler the test is skipped, unless CI=true,
// where a missing compiler is a failure.
func Build(t testing.TB) string {
	t.Helper()
	return buildC(t, "notify_floor", source)
}

// buildC compiles src, saved as name.c, with "cc -O2" into t.TempDir() and
// returns the binary's path (see Build for a missing compiler).
func buildC(t testing.TB, name string, src []byte) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		testenv.SkipOrFail(t, "floor: no C compiler (cc) in PATH, cannot build %s.c: %v", name, err)
	}
	dir := t.TempDir()
	srcPath := filepath.Join(dir, name+".c")
	if err := os.WriteFile(srcPath, src, 0o644); err != nil {
		t.Fatalf("floor: %v", err)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command(cc, "-O2", "-Wall", "-o", bin, srcPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("floor: %s -O2 %s.c: %v\n%s", cc, name, err, out)
	}
	return bin
}

// Run executes the floor binary with args and returns the ns_per_call value
// it prints. On failure the error includes the program's stderr.
func Run(bin string, args ...string) (nsPerCall float64, err error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("floor: %s %s: %w: %s", filepath.Base(bin),
			strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	out := strings.TrimSpace(stdout.String())
	v, ok := strings.CutPrefix(out, "ns_per_call=")
	if !ok || strings.ContainsAny(v, "\n ") {
		return 0, fmt.Errorf("floor: unexpected output %q", out)
	}
	ns, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("floor: unexpected output %q: %w", out, err)
	}
	if !(ns > 0) {
		return 0, errors.New("floor: non-positive ns_per_call " + v)
	}
	return ns, nil
}
