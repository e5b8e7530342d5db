package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Results are the parsed benchmark lines: every sample of every benchmark
// (several with -count), and the header lines go test prints.
type Results struct {
	// Samples maps a benchmark name without its -GOMAXPROCS suffix
	// ("PerCall/stat/tx") to its values of metric unit ("ns/call"), one per
	// run.
	Samples map[string]map[string][]float64
	// Header holds goos, goarch, cpu, … as printed by go test.
	Header map[string]string
	// Order is the order in which benchmark names first appeared.
	Order []string
	// Retries are the benchmarks' log lines about a run repeated after a
	// transient failure (BenchmarkWorkload: a conflict with another process).
	Retries []string
	// Failures are the benchmarks that failed, with what they logged.
	Failures []Failure
}

// Failure is one "--- FAIL: BenchmarkNAME" of the output and the lines
// indented under it.
type Failure struct {
	Name  string
	Lines []string
}

// Parse reads go test -bench output; fileName names it in errors.
//
// benchfmt reads the benchmark results and the configuration lines: go
// test's own (goos: linux, cpu: …) and BenchmarkWorkload's
// (workload-NAME: …, phases-NAME: …), which become Header. It passes over
// every other line, so the lines the report also needs from the test log
// (failures, panics, retried runs) are read from the same input apart.
func Parse(r io.Reader, fileName string) (*Results, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fileName, err)
	}
	res := &Results{Samples: map[string]map[string][]float64{}, Header: map[string]string{}}
	lines := strings.Split(string(data), "\n")
	br := benchfmt.NewReader(bytes.NewReader(data), fileName)
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.Result:
			res.add(rec)
		case *benchfmt.SyntaxError:
			if _, n := rec.Pos(); n >= 1 && n <= len(lines) && nameThenOutput(lines[n-1]) {
				continue
			}
			return nil, rec
		}
	}
	if err := br.Err(); err != nil {
		return nil, err
	}
	res.scanLog(lines)
	return res, nil
}

// add records one benchmark result, and the configuration it was printed
// under.
func (res *Results) add(r *benchfmt.Result) {
	for _, c := range r.Config {
		if c.File {
			res.Header[c.Key] = strings.TrimSpace(string(c.Value))
		}
	}
	name := benchName(r.Name)
	if res.Samples[name] == nil {
		res.Samples[name] = map[string][]float64{}
		res.Order = append(res.Order, name)
	}
	for _, v := range r.Values {
		// benchfmt converts units to base units (ns/op to sec/op); the
		// report and BenchmarkWorkload's metric names use the printed ones.
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		res.Samples[name][unit] = append(res.Samples[name][unit], val)
	}
}

// benchName is a result's name without the -GOMAXPROCS suffix go test adds
// (benchfmt has dropped "Benchmark"): the samples of a benchmark are the
// same series whatever the CPU count of the run.
func benchName(n benchfmt.Name) string {
	base, parts := n.Parts()
	if k := len(parts); k > 0 && parts[k-1][0] == '-' {
		parts = parts[:k-1]
	}
	return string(base) + string(bytes.Join(parts, nil))
}

// nameThenOutput reports whether line is a benchmark's name with no
// result after it: go test prints the name before it runs a benchmark,
// so what the benchmark prints, or its failure, follows the name on the
// same line. benchfmt reports such a line as a syntax error (no iteration
// count); it is not a malformed result.
func nameThenOutput(line string) bool {
	f := strings.Fields(line)
	if len(f) == 0 || !strings.HasPrefix(f[0], "Benchmark") {
		return false
	}
	if len(f) == 1 {
		return true
	}
	_, err := strconv.Atoi(f[1])
	return err != nil
}

var failLine = regexp.MustCompile(`^--- FAIL: Benchmark(\S+)`)

// retryLine is a benchmark's log line about a repeated run.
var retryLine = regexp.MustCompile(`^\S+_test\.go:\d+: (.*, retrying: .*)$`)

// scanLog collects from the lines benchfmt does not read the failures
// (each "--- FAIL:" or panic with the lines indented under it) and the
// benchmarks' log lines about retried runs.
func (res *Results) scanLog(lines []string) {
	var failure *Failure // the failure whose indented lines follow
	for _, raw := range lines {
		line := strings.TrimSpace(raw)
		if nameThenOutput(raw) {
			// A benchmark that fails after its first run has its name
			// printed before "--- FAIL:".
			line = strings.TrimSpace(strings.TrimPrefix(line, strings.Fields(line)[0]))
		}
		if failure != nil && line != "" && (raw[0] == ' ' || raw[0] == '\t') {
			failure.Lines = append(failure.Lines, line)
			continue
		}
		if failure != nil && len(failure.Lines) > 0 {
			res.Failures = append(res.Failures, *failure)
		}
		failure = nil
		if m := failLine.FindStringSubmatch(line); m != nil {
			failure = &Failure{Name: m[1]}
			continue
		}
		if strings.HasPrefix(line, "panic: ") {
			failure = &Failure{Name: " (a panic of the test binary)", Lines: []string{line}}
			continue
		}
		if m := retryLine.FindStringSubmatch(line); m != nil {
			res.Retries = append(res.Retries, m[1])
		}
	}
	if failure != nil && len(failure.Lines) > 0 {
		res.Failures = append(res.Failures, *failure)
	}
}
