package bench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// A Switches counts the context switches and CPU migrations of a command's
// whole process tree, threads included: with `perf stat -e
// context-switches,cpu-migrations` (its counters follow every child and
// thread) where perf works, else from the rusage wait4 returns for the
// command (voluntary and involuntary switches of the command and the
// descendants it waited for), which has no migrations.
type Switches struct {
	// Perf is the perf binary, "" when it cannot count here.
	Perf string
	// Why says why perf is not used ("" when it is).
	Why string
}

// SwitchCounts are the counts of one run.
type SwitchCounts struct {
	// Switches and Migrations are NaN when not counted.
	Switches, Migrations float64
}

var (
	switchesOnce sync.Once
	switches     Switches
)

// SwitchCounter returns how this machine counts: perf if `perf stat -e
// context-switches,cpu-migrations true` works (it needs the permission
// to count, which root has), else rusage.
func SwitchCounter() Switches {
	switchesOnce.Do(func() {
		perf, err := exec.LookPath("perf")
		if err != nil {
			switches.Why = "no perf in PATH"
			return
		}
		out, err := exec.Command(perf, "stat", "-x,", "-e", switchEvents, "true").CombinedOutput()
		if err != nil {
			switches.Why = fmt.Sprintf("perf stat -e %s true: %v: %s", switchEvents, err, bytes.TrimSpace(out))
			return
		}
		if _, err := parsePerfStat(out); err != nil {
			switches.Why = err.Error()
			return
		}
		switches.Perf = perf
	})
	return switches
}

const switchEvents = "context-switches,cpu-migrations"

// Describe is what a benchmark prints of the counter, in the "key: value"
// form of go test's header lines, for bench/report.
func (s Switches) Describe() string {
	if s.Perf != "" {
		return "switch-counter: perf stat"
	}
	return "switch-counter: getrusage (" + strings.ReplaceAll(s.Why, "\n", " ") + ")"
}

// Wrap makes cmd (not started) run under perf stat, counting into a file
// of dir; the returned function reads the counts once cmd has run. Without
// perf, cmd is left alone and the counts come from its rusage.
func (s Switches) Wrap(cmd *exec.Cmd, dir string) (counts func() (SwitchCounts, error)) {
	if s.Perf == "" {
		return func() (SwitchCounts, error) {
			ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if !ok {
				return SwitchCounts{}, fmt.Errorf("bench: no rusage for %s", cmd.Path)
			}
			return SwitchCounts{Switches: float64(ru.Nvcsw + ru.Nivcsw), Migrations: math.NaN()}, nil
		}
	}
	out := filepath.Join(dir, fmt.Sprintf("perf-stat-%d", perfFileN.Add(1)))
	cmd.Args = append([]string{s.Perf, "stat", "-x,", "-o", out, "-e", switchEvents, "--"}, cmd.Args...)
	cmd.Path = s.Perf
	cmd.Err = nil
	return func() (SwitchCounts, error) {
		b, err := os.ReadFile(out)
		if err != nil {
			return SwitchCounts{}, fmt.Errorf("bench: perf stat: %w", err)
		}
		os.Remove(out)
		return parsePerfStat(b)
	}
}

// perfFileN numbers the output files of perf stat.
var perfFileN atomic.Int64

// parsePerfStat reads the CSV lines of perf stat -x, ("4449,,context-switches,54624246,100.00,,").
func parsePerfStat(b []byte) (SwitchCounts, error) {
	c := SwitchCounts{Switches: math.NaN(), Migrations: math.NaN()}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(strings.TrimSpace(l), ",")
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return c, fmt.Errorf("bench: perf stat could not count %s: %q", f[2], f[0])
		}
		switch strings.TrimSuffix(f[2], ":u") {
		case "context-switches", "cs":
			c.Switches = v
		case "cpu-migrations", "migrations":
			c.Migrations = v
		}
	}
	if math.IsNaN(c.Switches) || math.IsNaN(c.Migrations) {
		return c, fmt.Errorf("bench: perf stat printed no %s: %q", switchEvents, b)
	}
	return c, nil
}
