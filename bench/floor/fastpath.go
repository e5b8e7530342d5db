package floor

import (
	"bytes"
	_ "embed"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

//go:embed fastpath_floor.c
var fastpathSource []byte

// FastpathModes are fastpath_floor.c's modes, in the order it runs them:
// the lookup natively, at the notify floor, through the agent reached by
// SIGSYS from its seccomp filter (trap), the same agent forwarding every
// call (forward), reached by Syscall User Dispatch (sud) or by a call site
// the supervisor rewrote (rewrite); then getppid, a call no filter wants,
// natively, under both filters and under Syscall User Dispatch.
var FastpathModes = []string{
	"native", "notify", "trap", "forward", "sud", "rewrite",
	"getppid-native", "getppid-filters", "getppid-sud",
}

// FastpathResult is one mode's line of fastpath_floor's output.
type FastpathResult struct {
	Mode string
	// GapMicros is the busy work after each call.
	GapMicros int
	// NsPerCall is the timed loop's time over its calls, busy work included.
	NsPerCall float64
	// CallNsMedian is the median time of one call alone.
	CallNsMedian float64
	// CswPerCall and SupervisorCswPerCall are context switches (voluntary
	// and not) per call of the caller over its timed loop and of the
	// supervisor over the whole child.
	CswPerCall, SupervisorCswPerCall float64
	// Served counts the calls the supervisor served, Recorded those the
	// agent made natively and recorded, Refused the opens for writing made
	// from the agent page that the base filter notified (-o).
	Served, Recorded, Refused int
}

// BuildFastpath compiles fastpath_floor.c as Build compiles notify_floor.c.
func BuildFastpath(t testing.TB) string {
	t.Helper()
	return buildC(t, "fastpath_floor", fastpathSource)
}

// RunFastpath runs the fastpath_floor binary: n timed calls with gapMicros
// of busy work after each, in each of modes (all when none is given), and
// returns one result per mode.
func RunFastpath(bin string, n, gapMicros int, modes ...string) ([]FastpathResult, error) {
	return RunFastpathArgs(bin, []string{"-n", strconv.Itoa(n), "-g", strconv.Itoa(gapMicros)}, modes...)
}

// RunFastpathArgs is RunFastpath with fastpath_floor's arguments given
// (-f PATH: the path to stat; -c: the path counts as changed; -o: open and
// close it instead).
func RunFastpathArgs(bin string, args []string, modes ...string) ([]FastpathResult, error) {
	args = slices.Clone(args)
	if len(modes) > 0 {
		args = append(args, "-M", strings.Join(modes, ","))
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("floor: %s %s: %w: %s", filepath.Base(bin),
			strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var out []FastpathResult
	for line := range strings.Lines(stdout.String()) {
		r, err := parseFastpathLine(strings.TrimSpace(line))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	want := modes
	if len(want) == 0 {
		want = FastpathModes
	}
	if len(out) != len(want) {
		return nil, fmt.Errorf("floor: fastpath_floor printed %d results for %d modes: %q", len(out), len(want), stdout.String())
	}
	return out, nil
}

// parseFastpathLine parses "mode=M gap_us=G ns_per_call=T ...".
func parseFastpathLine(line string) (FastpathResult, error) {
	var r FastpathResult
	fields := map[string]string{}
	for f := range strings.FieldsSeq(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return r, fmt.Errorf("floor: unexpected output %q", line)
		}
		fields[k] = v
	}
	r.Mode = fields["mode"]
	ints := []struct {
		key string
		dst *int
	}{{"gap_us", &r.GapMicros}, {"served", &r.Served}, {"recorded", &r.Recorded}, {"refused", &r.Refused}}
	for _, f := range ints {
		v, err := strconv.Atoi(fields[f.key])
		if err != nil {
			return r, fmt.Errorf("floor: %s in %q: %w", f.key, line, err)
		}
		*f.dst = v
	}
	floats := []struct {
		key string
		dst *float64
	}{
		{"ns_per_call", &r.NsPerCall}, {"call_ns_median", &r.CallNsMedian},
		{"csw_per_call", &r.CswPerCall}, {"sup_csw_per_call", &r.SupervisorCswPerCall},
	}
	for _, f := range floats {
		v, err := strconv.ParseFloat(fields[f.key], 64)
		if err != nil {
			return r, fmt.Errorf("floor: %s in %q: %w", f.key, line, err)
		}
		*f.dst = v
	}
	if r.Mode == "" || !(r.NsPerCall > 0) || !(r.CallNsMedian > 0) {
		return r, fmt.Errorf("floor: unexpected output %q", line)
	}
	return r, nil
}
