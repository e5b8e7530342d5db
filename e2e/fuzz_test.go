package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
	"txexec/syscalls"
)

// fuzzExcluded are the calls the supervisor serves that the fuzzer does
// not make, each because it would end, replace or corrupt the fuzzer
// rather than test the supervisor.
var fuzzExcluded = map[int]string{
	unix.SYS_EXECVE:            "replaces the fuzzer",
	unix.SYS_EXECVEAT:          "replaces the fuzzer",
	unix.SYS_KILL:              "kills the fuzzer, or as uid 1000 every process of that user",
	unix.SYS_TKILL:             "kills a fuzzer thread",
	unix.SYS_TGKILL:            "kills a fuzzer thread",
	unix.SYS_RT_SIGQUEUEINFO:   "kills the fuzzer",
	unix.SYS_RT_TGSIGQUEUEINFO: "kills a fuzzer thread",
	unix.SYS_PIDFD_SEND_SIGNAL: "kills the fuzzer",
	unix.SYS_PROCESS_VM_WRITEV: "writes the fuzzer's own memory, outside the arena its pointers keep to",
	unix.SYS_CLONE:             "its namespace cases start a child on a random stack when the kernel runs them",
}

// fuzzCalls is the fuzzer's list of calls (testdata/fuzz.c): every call
// the supervisor serves — whose entry has a handler, or that the tracer
// stops — and for a call the filter sends only for some values of one
// argument, each such value, less fuzzExcluded.
func fuzzCalls(t *testing.T) string {
	t.Helper()
	table, err := syscalls.NewTable(syscalls.Entries())
	require.NoError(t, err)
	served := func(s syscalls.Support) bool {
		return s != syscalls.Passthrough && s != syscalls.Refused
	}
	var b strings.Builder
	n := 0
	for _, e := range table.Entries() {
		if _, skip := fuzzExcluded[e.Nr]; skip {
			continue
		}
		if served(e.Support) {
			fmt.Fprintf(&b, "%d\n", e.Nr)
			n++
		}
		for _, cs := range e.Cases {
			if served(cs.Support) && !served(e.Support) {
				fmt.Fprintf(&b, "%d %d %#x\n", e.Nr, cs.When.Arg, cs.When.Value)
				n++
			}
		}
	}
	require.Greater(t, n, 100, "calls to fuzz")
	return b.String()
}

// TestSyscallFuzzSoak: random arguments to every call the supervisor
// serves, from several processes of several threads at once, as uid 1000
// under a root txexec, --on-exit=abort, in a scratch directory. The
// supervisor answers every call (the fuzzer's processes end by their
// clock, none killed by what the supervisor wrote), does not fail
// internally (exit 70, "internal error"), does not hang (run's timeout),
// and leaves the host unchanged. A few seeds for some seconds each in the
// default run; many, for a minute each, under TXEXEC_SOAK=1 (make soak).
func TestSyscallFuzzSoak(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root; the fuzzer runs as uid 1000")
	requireTools(t, "gcc", "setpriv")
	fixtures := t.TempDir()
	fuzz := buildC(t, fixtures, "fuzz", "fuzz")
	callsFile := filepath.Join(fixtures, "calls")
	require.NoError(t, os.WriteFile(callsFile, []byte(fuzzCalls(t)), 0o644))
	openToOthers(t, fixtures)

	seeds, budget := 3, 5*time.Second
	if os.Getenv("TXEXEC_SOAK") == "1" {
		seeds, budget = 12, time.Minute
	}
	const processes, threads = 3, 4
	for seed := 1; seed <= seeds; seed++ {
		t.Run("seed "+strconv.Itoa(seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "scratch")
			writeFiles(t, dir, map[string]string{"f": "file\n", "g": "other\n", "d/f": "in d\n", "d/sub/": ""})
			require.NoError(t, os.Symlink("f", filepath.Join(dir, "link")))
			require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "dangling")))
			require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, 1000, 1000)
			}))
			openToOthers(t, dir)
			before := snapshotTree(t, filepath.Dir(dir), nil)
			fixturesBefore := snapshotTree(t, fixtures, nil)

			argv := append(append([]string{}, unprivileged...), fuzz, strconv.Itoa(seed),
				strconv.FormatInt(budget.Milliseconds(), 10), strconv.Itoa(processes), strconv.Itoa(threads), callsFile)
			got := run(t, transaction, command{Argv: argv, Dir: dir, TxArgs: []string{"--on-exit=abort", "--unsupported=error"}})
			require.Equal(t, 0, got.Status, "stdout:\n%s\nstderr:\n%s", got.Stdout, tail(got.Stderr, 40))
			assert.NotContains(t, got.Stderr, "internal error")
			re := regexp.MustCompile(`(?m)^process [0-9]+: [0-9]+ calls$`)
			assert.Len(t, re.FindAllString(got.Stdout, -1), processes, "every fuzzing process ended by its clock:\n%s", got.Stdout)
			t.Logf("%s", strings.TrimSpace(got.Stdout))

			assert.Equal(t, before, snapshotTree(t, filepath.Dir(dir), nil), "the aborted transaction changed the scratch directory")
			assert.Equal(t, fixturesBefore, snapshotTree(t, fixtures, nil))
		})
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
