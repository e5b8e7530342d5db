package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// pythonFSTests are the modules of CPython's own test suite that exercise
// the file system: thousands of checks nobody here wrote, of stat, open,
// rename, links, permissions, sockets bound to paths, directory walks,
// temporary files and copies.
var pythonFSTests = []string{
	"test_os", "test_shutil", "test_pathlib", "test_tempfile", "test_glob",
	"test_posix", "test_stat", "test_fileio", "test_filecmp",
}

// TestPythonFileSystemSuite runs CPython's file-system tests inside one
// transaction: they pass there as natively, and leave nothing behind.
func TestPythonFileSystemSuite(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import test.test_os").Run(); err != nil {
		testenv.SkipOrFail(t, "%s has no test suite (libpythonX.Y-testsuite; scripts/deps.sh installs it): %v", py, err)
	}
	args := append([]string{py, "-m", "test"}, pythonFSTests...)
	dir := t.TempDir()
	got := run(t, transaction, command{Argv: args, Dir: dir, Env: []string{"TMPDIR=" + dir}})
	require.Equal(t, 0, got.Status, "stdout:\n%s\nstderr:\n%s", got.Stdout, got.Stderr)
	assert.True(t, strings.Contains(got.Stdout, "Tests result: SUCCESS"), "stdout:\n%s", got.Stdout)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Empty(t, names, "the suite cleans up after itself, and so does the commit")
}
