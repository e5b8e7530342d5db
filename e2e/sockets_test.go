package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// socketProbe binds AF_UNIX sockets by relative paths after a chdir (which
// the kernel would resolve against the wrong directory), connects to one
// by its absolute path, binds abstract and inet addresses, and removes one.
const socketProbe = `
import os, socket, stat
os.chdir("w")
s = socket.socket(socket.AF_UNIX); s.bind("s1"); s.listen()
st = os.lstat("s1")
print("s1", stat.S_ISSOCK(st.st_mode), oct(st.st_mode & 0o777))
c = socket.socket(socket.AF_UNIX); c.connect(os.path.abspath("s1"))
a, _ = s.accept(); c.send(b"hi"); print("received", a.recv(2))
try:
    socket.socket(socket.AF_UNIX).bind("s1")
except OSError as e:
    print("bind again:", os.strerror(e.errno))
s2 = socket.socket(socket.AF_UNIX); s2.bind("s2"); os.unlink("s2")
os.mkdir("new"); s3 = socket.socket(socket.AF_UNIX); s3.bind("new/s3")
print("in a new directory:", stat.S_ISSOCK(os.lstat("new/s3").st_mode))
socket.socket(socket.AF_UNIX).bind("\0txexec-e2e-abstract-%d" % os.getpid()); print("abstract bound")
socket.socket().bind(("127.0.0.1", 0)); print("inet bound")
print(sorted(os.listdir(".")))
`

// TestBindUnixSocket: sockets bound to paths are made where the caller's
// view says, are listed, connectable by path, removable; commit keeps them
// and abort removes them.
func TestBindUnixSocket(t *testing.T) {
	requireTools(t, "python3")
	var want string
	for _, tc := range []struct {
		m      mode
		txArgs []string
		kept   []string
	}{
		{native, nil, []string{"new/s3", "s1"}},
		{transaction, nil, []string{"new/s3", "s1"}},
		{transaction, []string{"--on-exit=abort"}, nil},
	} {
		dir := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(dir, "w"), 0o755))
		old := time.Unix(1e9, 0)
		require.NoError(t, os.Chtimes(filepath.Join(dir, "w"), old, old))
		got := run(t, tc.m, command{Argv: []string{"python3", "-c", socketProbe}, Dir: dir, TxArgs: tc.txArgs, Env: []string{"PYTHONDONTWRITEBYTECODE=1"}})
		require.Equal(t, 0, got.Status, "%s %v: stderr:\n%s", tc.m, tc.txArgs, got.Stderr)
		if want == "" {
			want = got.Stdout
			assert.Contains(t, want, "received b'hi'")
		}
		assert.Equal(t, want, got.Stdout, "%s %v", tc.m, tc.txArgs)
		var left []string
		filepath.WalkDir(filepath.Join(dir, "w"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type()&os.ModeSocket != 0 {
				rel, _ := filepath.Rel(filepath.Join(dir, "w"), p)
				left = append(left, rel)
			}
			return nil
		})
		assert.Equal(t, tc.kept, left, "%s %v: sockets left", tc.m, tc.txArgs)
		if tc.kept == nil {
			// Abort removes the sockets it made on the host at once and
			// puts the directory's mtime back.
			st, err := os.Stat(filepath.Join(dir, "w"))
			require.NoError(t, err)
			assert.Equal(t, old, st.ModTime(), "%s %v: mtime of the directory", tc.m, tc.txArgs)
		}
	}
}
