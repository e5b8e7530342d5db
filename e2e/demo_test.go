package e2e

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demoSection matches the header of each step scripts/demo.sh prints.
var demoSection = regexp.MustCompile("\n\033\\[1m== (.*)\033\\[0m\n")

// TestMakeDemo runs scripts/demo.sh, what `make demo` runs after building,
// with this test's txexec and a scratch area of its own, and checks that it
// shows what the README promises: a failing install rolled back, a good one
// committed, and the history (issue 6).
func TestMakeDemo(t *testing.T) {
	// The demo needs only POSIX sh and coreutils, as on a fresh machine.
	requireTools(t, "sh", "awk", "find", "sort", "sed", "grep", "mktemp")
	scratch := t.TempDir()
	r := run(t, native, command{
		Argv: []string{"sh", "../scripts/demo.sh"},
		Env:  []string{"TXEXEC_BIN=" + txexecBin, "TMPDIR=" + scratch},
	})
	require.Equal(t, 0, r.Status, "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)

	// Split the output into its steps.
	sections := map[string]string{}
	heads := demoSection.FindAllStringSubmatchIndex(r.Stdout, -1)
	for i, h := range heads {
		end := len(r.Stdout)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		sections[r.Stdout[h[2]:h[3]]] = r.Stdout[h[1]:end]
	}
	section := func(title string) string {
		s, ok := sections[title]
		require.True(t, ok, "the demo shows %q; stdout:\n%s", title, r.Stdout)
		return s
	}

	assert.Equal(t, "   ./etc/passwd\n", section("The tree before"))
	assert.Contains(t, section("A failing install under txexec"), "(exit status 1)")
	assert.Contains(t, r.Stderr, "post-install: failed!\n")
	assert.Contains(t, r.Stderr, "txexec: transaction 1 aborted: the command exited with status 1\n")
	assert.Equal(t, "   ./etc/passwd\n", section("The tree after the failed install: unchanged"), "rolled back")
	assert.Equal(t, "   ./etc/demo/demo.conf\n   ./etc/passwd\n   ./usr/bin/demo-tool\nhello from the demo tool\n",
		section("The tree after the good install: everything, at once"), "committed")
	log := section("txexec log")
	assert.Regexp(t, `(?m)^2 +applied .*/install\.sh .*/root ok +\[undoable, [0-9.]+[KMG]?\]$`, log)
	assert.Regexp(t, `(?m)^1 +aborted .*/install\.sh .*/root fail +\(the command exited with status 1\)$`, log)
	show := section("txexec show (the committed transaction)")
	assert.Regexp(t, `^transaction 2: applied\n`, show)
	for _, change := range []string{
		`(?m)^  create /.*/root/usr/bin/demo-tool$`,
		`(?m)^  mkdir /.*/root/etc/demo$`,
		`(?m)^  create /.*/root/etc/demo/demo\.conf$`,
		`(?m)^  replace /.*/root/etc/passwd$`,
	} {
		assert.Regexp(t, change, show)
	}

	left, err := os.ReadDir(scratch)
	require.NoError(t, err)
	assert.Empty(t, left, "the demo removes its scratch area")
}
