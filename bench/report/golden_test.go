package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata with the current output")

// goldenSteps is the last history step the golden report holds: later
// steps (each optimization adds one) must not change it.
const goldenSteps = 15

// goldenMachine and goldenTime stand for what run reads from the machine
// and the clock, so that the golden report depends on its inputs only.
var (
	goldenMachine = Machine{NProc: 2, CPU: "Intel(R) Xeon(R) CPU @ 2.20GHz", Kernel: "Linux 6.12.0 x86_64", Go: "go1.26.3",
		BenchDir: "a tmpfs mounted for the run under /var/tmp", BenchFS: "tmpfs", TmpDir: "/tmp", TmpFS: "ext4",
		Load: "0.52, 0.81, 1.10", WorkloadDir: "/var/tmp", WorkloadFS: "ext4 without a journal"}
	goldenTime = time.Date(2026, 11, 24, 0, 14, 0, 0, time.UTC)
)

// TestGolden renders the report of testdata/out.txt, three rounds in the
// shape of make bench's output (go test headers of several packages, every
// benchmark the report knows, -base modes, a failed workload, a retried
// run), with history steps 1 to goldenSteps of bench/history, and compares
// it with testdata/performance.md, and the plots with testdata/*.svg; go test -run TestGolden -update
// rewrites that file after an intended change.
func TestGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/out.txt")
	require.NoError(t, err)
	res, err := Parse(bytes.NewReader(in), "testdata/out.txt")
	require.NoError(t, err)

	// From the repository's root, as make bench runs it, so that the
	// steps name their files as the real report does.
	t.Chdir("../..")
	all, err := readHistory("bench/history")
	require.NoError(t, err)
	var steps []Step
	for _, st := range all {
		if n, err := strconv.Atoi(filepath.Base(st.File)[:2]); err == nil && n <= goldenSteps {
			steps = append(steps, st)
		}
	}
	require.Len(t, steps, goldenSteps)

	var b bytes.Buffer
	require.NoError(t, Write(&b, res, steps, goldenMachine, goldenTime))
	golden(t, "bench/report/testdata/performance.md", b.Bytes())
	for name, c := range Plots(res) {
		golden(t, "bench/report/testdata/"+name, c.Render())
	}
}

// golden compares got with the file at path, or with -update writes it.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "go test -run %s -update writes it", t.Name())
	assert.Equal(t, string(want), string(got), "%s differs: if the change is intended, go test -run %s -update", path, t.Name())
}

// execute renders one of the report's parts (a template the report
// defines) from its data, so that a test can look at one part at a time.
func execute(w io.Writer, part string, data any) error {
	return reportTemplate.ExecuteTemplate(w, part, data)
}

// TestHistoryFilesRender: every recorded step of bench/history, those
// added after the golden report's too, parses and renders its tables.
func TestHistoryFilesRender(t *testing.T) {
	steps, err := readHistory("../history")
	require.NoError(t, err)
	require.NotEmpty(t, steps)
	for _, st := range steps {
		t.Run(filepath.Base(st.File), func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, execute(&b, "steps", newSteps([]Step{st})))
			if hasBaseRows(st.Res) {
				assert.Contains(t, b.String(), "Raw output: `"+st.File+"`")
				return
			}
			// A step measured by whole-program paired runs only says so,
			// with its method in its text.
			assert.NotEmpty(t, st.Text, "a step without -base measurements needs its method in text")
			assert.Contains(t, b.String(), st.File+" holds no -base measurements.")
		})
	}
}

// hasBaseRows says whether res holds a -base measurement in any unit the
// steps' tables show.
func hasBaseRows(res *Results) bool {
	for _, u := range baseUnits {
		if len(baseRows(res, u.unit)) > 0 {
			return true
		}
	}
	return false
}
