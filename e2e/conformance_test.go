package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConformanceRunner: e2e/conformance/run.sh passes a case txexec runs
// as Linux does, and fails, naming what differed, each way a txexec can go
// wrong: a stand-in that runs the command without a transaction (the
// aborted run changes the tree), one that also loses the command's stdout, and
// one that also exits 0 whatever the command did.
func TestConformanceRunner(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "case.sh")
	require.NoError(t, os.WriteFile(script, []byte("echo hi > new.txt\ncat new.txt a.txt\nfalse\n"), 0o644))
	fake := func(name, body string) string {
		p := filepath.Join(dir, name)
		// $1 is --on-exit=..., $2 is --.
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\nshift 2\n"+body+"\n"), 0o755))
		return p
	}
	for _, tc := range []struct {
		name, txexec string
		verdict      string // the PASS/FAIL line (a case outside ours is named by its path)
	}{
		{"txexec", txexecBin, "PASS " + script},
		{"no transaction", fake("notx", `exec "$@"`), "FAIL " + script + ": abort-changed-tree"},
		{"stdout lost", fake("mute", `"$@" >/dev/null`), "FAIL " + script + ": stdout abort-stdout abort-changed-tree"},
		{"exit status lost", fake("zero", `"$@"; exit 0`), "FAIL " + script + ": exit abort-exit abort-changed-tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("conformance/run.sh", tc.txexec, script)
			cmd.Env = append(os.Environ(), "TXEXEC_STATE_DIR="+t.TempDir(), "TXEXEC_CONFORMANCE_DIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			require.NotEmpty(t, lines)
			assert.Equal(t, tc.verdict, lines[0], string(out))
			if strings.HasPrefix(tc.verdict, "PASS") {
				assert.NoError(t, err)
				assert.Equal(t, "conformance: 1 passed, 0 failed", lines[len(lines)-1])
				return
			}
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, string(out))
			assert.Equal(t, 1, ee.ExitCode())
			assert.Equal(t, "conformance: 0 passed, 1 failed", lines[len(lines)-1])
		})
	}
}
