package e2e

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDebPackage builds the Debian package of the binary under test
// (scripts/deb.sh, as make deb does) and looks into it with dpkg-deb: its
// files, its control fields, and that what it installs is the binary, the
// man page and the completion of the tree. It never installs it.
func TestDebPackage(t *testing.T) {
	requireTools(t, "dpkg-deb", "make", "gzip")
	out := t.TempDir()
	cmd := exec.Command("../scripts/deb.sh", txexecBin, out)
	cmd.Env = append(os.Environ(), "TXEXEC_VERSION=v1.2.3-4-gabcdef")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	deb := strings.TrimSpace(string(b))
	arch, err := exec.Command("dpkg", "--print-architecture").Output()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(out, "txexec_1.2.3+4+gabcdef_"+strings.TrimSpace(string(arch))+".deb"), deb)

	contents, err := exec.Command("dpkg-deb", "-c", deb).Output()
	require.NoError(t, err)
	files := map[string]string{} // path: mode and owner
	for _, line := range strings.Split(strings.TrimSpace(string(contents)), "\n") {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 6, line)
		files[f[len(f)-1]] = f[0] + " " + f[1]
	}
	for path, want := range map[string]string{
		"./usr/bin/txexec":                               "-rwxr-xr-x root/root",
		"./usr/share/man/man1/txexec.1.gz":               "-rw-r--r-- root/root",
		"./usr/share/bash-completion/completions/txexec": "-rw-r--r-- root/root",
		"./usr/share/doc/txexec/README.md":               "-rw-r--r-- root/root",
		"./":                                             "drwxr-xr-x root/root",
	} {
		assert.Equal(t, want, files[path], path)
	}

	for field, want := range map[string]string{
		"Package":      "txexec",
		"Version":      "1.2.3+4+gabcdef",
		"Architecture": strings.TrimSpace(string(arch)),
		"Depends":      "libc6, libseccomp2 (>= 2.5.0)",
	} {
		got, err := exec.Command("dpkg-deb", "-f", deb, field).Output()
		require.NoError(t, err, field)
		assert.Equal(t, want, strings.TrimSpace(string(got)), field)
	}
	info, err := exec.Command("dpkg-deb", "-I", deb).Output()
	require.NoError(t, err)
	assert.Contains(t, string(info), "Description: run unmodified programs as ACID file-system transactions")

	root := t.TempDir()
	require.NoError(t, exec.Command("dpkg-deb", "-x", deb, root).Run())
	sameFile(t, txexecBin, filepath.Join(root, "usr/bin/txexec"))
	sameFile(t, "../docs/txexec.bash", filepath.Join(root, "usr/share/bash-completion/completions/txexec"))
	f, err := os.Open(filepath.Join(root, "usr/share/man/man1/txexec.1.gz"))
	require.NoError(t, err)
	defer f.Close()
	z, err := gzip.NewReader(f)
	require.NoError(t, err)
	man, err := io.ReadAll(z)
	require.NoError(t, err)
	want, err := os.ReadFile("../docs/txexec.1")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(man), "the packaged man page")
	v, err := exec.Command(filepath.Join(root, "usr/bin/txexec"), "--version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(v), "txexec "), "%q", v)
}

// TestMakeInstall: make install puts the binary, the launcher template,
// the man page and the completion under PREFIX (in DESTDIR).
func TestMakeInstall(t *testing.T) {
	requireTools(t, "make")
	dest := t.TempDir()
	out, err := exec.Command("make", "-s", "-C", "..", "install-files", "BIN="+txexecBin, "LAUNCHER="+launcherBin, "DESTDIR="+dest, "PREFIX=/opt/tx").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, f := range []struct {
		path, from string
		mode       os.FileMode
	}{
		{"opt/tx/bin/txexec", txexecBin, 0o755},
		{"opt/tx/lib/txexec/txexec-launcher", launcherBin, 0o755},
		{"opt/tx/share/man/man1/txexec.1", "../docs/txexec.1", 0o644},
		{"opt/tx/share/bash-completion/completions/txexec", "../docs/txexec.bash", 0o644},
	} {
		fi, err := os.Stat(filepath.Join(dest, f.path))
		require.NoError(t, err)
		assert.Equal(t, f.mode, fi.Mode().Perm(), f.path)
		sameFile(t, f.from, filepath.Join(dest, f.path))
	}
}

func sameFile(t *testing.T, want, got string) {
	t.Helper()
	w, err := os.ReadFile(want)
	require.NoError(t, err)
	g, err := os.ReadFile(got)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(w, g), "%s is not %s", got, want)
}
