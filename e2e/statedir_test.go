package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStateDirOutsideTransaction: a transaction that reads txexec's state
// directory (a `du` or a backup of the file system above it) commits: the
// store's own writes there are no conflict, and the directory is not the
// transaction's to change. Its database is readable by its owner only.
func TestStateDirOutsideTransaction(t *testing.T) {
	parent := t.TempDir()
	state := filepath.Join(parent, "state")
	got := run(t, transaction, command{Argv: []string{"sh", "-c", `du -s "$0" >/dev/null && ls -R "$0" >/dev/null && echo > "$0/mine"`, parent},
		Dir: t.TempDir(), Env: []string{"TXEXEC_STATE_DIR=" + state}})
	require.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
	assert.FileExists(t, filepath.Join(parent, "mine"), "committed")
	fi, err := os.Stat(filepath.Join(state, "txexec.db"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
