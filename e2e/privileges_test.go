package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// nnpWarning is the line a privileged txexec prints when it inherited
// no_new_privs (interpose/stub.go).
const nnpWarning = "txexec: warning: no_new_privs is inherited: set-user-ID bits and file capabilities are ignored in the transaction\n"

// TestSetuidSetups: which setups keep set-user-ID programs working inside
// a transaction (docs/semantics.md §7). A set-user-ID-root program started
// by uid 1000 gets euid 0 under a root txexec; wherever the filter goes in
// under no_new_privs — txexec run by a user, a root txexec that inherited
// no_new_privs, root without CAP_SYS_ADMIN — the bit is ignored, as under
// any seccomp sandbox, and the program runs with the caller's uid.
func TestSetuidSetups(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "setpriv")
	fixtures := t.TempDir()
	creds := buildC(t, fixtures, "creds", "creds")
	suid := filepath.Join(fixtures, "creds-suid")
	require.NoError(t, exec.Command("cp", creds, suid).Run())
	require.NoError(t, unix.Chmod(suid, 0o4755)) // owned by root: set-user-ID root
	// A txexec binary every user may run (the test's own build sits in a
	// directory only root can search).
	tx := filepath.Join(fixtures, "txexec")
	require.NoError(t, exec.Command("cp", txexecBin, tx).Run())
	openToOthers(t, fixtures)
	byUser := append(append([]string{}, unprivileged...), suid)

	t.Run("native", func(t *testing.T) {
		got := run(t, native, command{Argv: byUser})
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, "uid=1000 euid=0\n", got.Stdout)
	})
	t.Run("root txexec: set-user-ID works", func(t *testing.T) {
		got := run(t, native, command{Argv: append([]string{tx, "--"}, byUser...)})
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, "uid=1000 euid=0\n", got.Stdout)
		assert.Empty(t, got.Stderr)
	})
	t.Run("user txexec: no_new_privs, set-user-ID ignored", func(t *testing.T) {
		state := t.TempDir()
		require.NoError(t, os.Chown(state, 1000, 1000))
		openToOthers(t, state)
		argv := append(append([]string{}, unprivileged...), tx, "--", suid)
		got := run(t, native, command{Argv: argv, Env: []string{"TXEXEC_STATE_DIR=" + state}})
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, "uid=1000 euid=1000\n", got.Stdout)
		assert.Empty(t, got.Stderr, "the documented behaviour of a user's txexec: no warning")
	})
	t.Run("root txexec that inherited no_new_privs: set-user-ID ignored, with a warning", func(t *testing.T) {
		argv := append([]string{"setpriv", "--no-new-privs", tx, "--"}, byUser...)
		got := run(t, native, command{Argv: argv})
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, "uid=1000 euid=1000\n", got.Stdout)
		assert.Equal(t, nnpWarning, got.Stderr)
	})
	t.Run("root without CAP_SYS_ADMIN: runs under no_new_privs", func(t *testing.T) {
		// A container's default capability set lacks CAP_SYS_ADMIN: the
		// kernel then accepts the filter only under no_new_privs.
		noAdmin := []string{"setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", tx}
		got := run(t, native, command{Argv: append(append(append([]string{}, noAdmin...), "--"), byUser...)})
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, "uid=1000 euid=1000\n", got.Stdout)
		assert.Empty(t, got.Stderr)

		// And it is a full transaction: a change commits, a failed
		// command's change is rolled back.
		dir := t.TempDir()
		got = run(t, native, command{Argv: append(append(append([]string{}, noAdmin...), "--"),
			"sh", "-c", `sed -n "s/^CapEff:[[:space:]]*//p" /proc/self/status; echo kept > kept`), Dir: dir})
		require.Equal(t, 0, got.Status, got.Stderr)
		capEff, err := strconv.ParseUint(strings.TrimSpace(got.Stdout), 16, 64)
		require.NoError(t, err, "CapEff: %q", got.Stdout)
		require.Zero(t, capEff&(1<<unix.CAP_SYS_ADMIN), "the command runs without CAP_SYS_ADMIN")
		require.NotZero(t, capEff&(1<<unix.CAP_DAC_OVERRIDE), "and with root's other capabilities")
		got = run(t, native, command{Argv: append(append(append([]string{}, noAdmin...), "--"),
			"sh", "-c", "echo lost > lost; exit 3"), Dir: dir})
		require.Equal(t, 3, got.Status, got.Stderr)
		assert.FileExists(t, filepath.Join(dir, "kept"))
		assert.NoFileExists(t, filepath.Join(dir, "lost"))
	})
}
