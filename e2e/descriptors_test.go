package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// TestInheritedDirFD: a directory descriptor txexec's parent opened before
// txexec started (so the view never handed it out) is still a name in the
// transaction: openat, mkdirat and /dev/fd/N/… paths through it are staged
// like any other change, committed on success and dropped on abort.
func TestInheritedDirFD(t *testing.T) {
	requireTools(t, "python3")
	const script = `
import os
fd = os.open("new.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=3)
os.write(fd, b"through the descriptor\n")
os.close(fd)
os.mkdir("newdir", 0o755, dir_fd=3)
os.unlink("old.txt", dir_fd=3)
with open("/dev/fd/3/magic.txt", "w") as f:
    f.write("through the magic link\n")
print(sorted(os.listdir("/dev/fd/3")))
`
	for _, tc := range []struct {
		name   string
		txArgs []string
		commit bool
	}{
		{"commit", nil, true},
		{"abort", []string{"--on-exit=abort"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old\n"), 0o644))
			d, err := os.Open(dir)
			require.NoError(t, err)
			defer d.Close()

			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := newCmd(ctx, t, transaction, command{Argv: []string{"python3", "-c", script}, Dir: t.TempDir(), TxArgs: tc.txArgs})
			cmd.ExtraFiles = []*os.File{d} // descriptor 3
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run()
			require.Equal(t, 0, statusOf(cmd.ProcessState), "stderr:\n%s", stderr.String())
			assert.Equal(t, "['magic.txt', 'new.txt', 'newdir']\n", stdout.String(), "the transaction sees its own changes")

			names := func() []string {
				ents, err := os.ReadDir(dir)
				require.NoError(t, err)
				var out []string
				for _, e := range ents {
					out = append(out, e.Name())
				}
				return out
			}
			if tc.commit {
				assert.Equal(t, []string{"magic.txt", "new.txt", "newdir"}, names(), "committed")
				b, err := os.ReadFile(filepath.Join(dir, "new.txt"))
				require.NoError(t, err)
				assert.Equal(t, "through the descriptor\n", string(b))
			} else {
				assert.Equal(t, []string{"old.txt"}, names(), "an abort leaves the directory as it was; stderr:\n%s", stderr.String())
			}
		})
	}
}

// TestDevFDPathsStayInTransaction: /dev/fd/N, /dev/stdin and the like are
// symlinks into /proc/self on devtmpfs; a path through them reaches the
// object behind the caller's descriptor in the view, not the host.
func TestDevFDPathsStayInTransaction(t *testing.T) {
	dir := t.TempDir()
	script := `exec 4<` + dir + `; echo x > /dev/fd/4/via-dev-fd; mkdir /dev/fd/4/sub; ls /dev/fd/4; cat /dev/stdin`
	got := run(t, transaction, command{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), TxArgs: []string{"--on-exit=abort"},
		Stdin: bytes.NewBufferString("from stdin\n")})
	assert.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
	assert.Equal(t, "sub\nvia-dev-fd\nfrom stdin\n", got.Stdout)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "an abort leaves nothing behind")
}

// TestOutputFileIsNotAConflict: a command whose stdout is a file in a
// directory it lists (`txexec -- ls -l > out.txt`) writes that file
// straight through the inherited descriptor; the transaction read its size
// and times, and finding them changed by its own output at commit is no
// conflict.
func TestOutputFileIsNotAConflict(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), nil, 0o644))
	out, err := os.Create(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := newCmd(ctx, t, transaction, command{Argv: []string{"sh", "-c", "ls -l; touch b"}, Dir: dir})
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	_ = cmd.Run()
	require.Equal(t, 0, statusOf(cmd.ProcessState), "stderr:\n%s", stderr.String())
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(b), " out.txt\n")
	assert.FileExists(t, filepath.Join(dir, "b"), "committed")
}

// TestCwdInPassthroughSubtree: txexec started in a directory of a
// passthrough subtree (/dev/shm) runs the command there; files made there
// are the host's at once, as for any path in the subtree.
func TestCwdInPassthroughSubtree(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "txexec-e2e-")
	if err != nil {
		testenv.SkipOrFail(t, "no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	got := run(t, transaction, command{Argv: []string{"sh", "-c", "pwd; echo x > f; cat f"}, Dir: dir, TxArgs: []string{"--on-exit=abort"}})
	assert.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
	assert.Equal(t, dir+"\nx\n", got.Stdout)
	assert.FileExists(t, filepath.Join(dir, "f"), "passthrough: not rolled back")
}

// TestProcSelfCwdAfterChdirIntoPassthroughSubtree: after a chdir into a
// passthrough subtree (--exclude), /proc/self/cwd is that directory, as
// natively, not the directory txexec started in (the kernel's cwd of the
// tree, since chdir is emulated): a chmod through it must not reach the
// host's start directory around the transaction. Found by
// TestSyscallFuzzSoak (chdir into /sys, then fchmodat of /proc/self/cwd).
func TestProcSelfCwdAfterChdirIntoPassthroughSubtree(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	dir := t.TempDir()
	excluded := filepath.Join(t.TempDir(), "excluded")
	sub := filepath.Join(excluded, "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	got := run(t, transaction, command{Argv: []string{"sh", "-c", "cd " + sub + " && chmod 0700 /proc/self/cwd && stat -c %a /proc/self/cwd/"},
		Dir: dir, TxArgs: []string{"--on-exit=abort", "--exclude", excluded}})
	assert.Equal(t, "700\n", got.Stdout, "stderr:\n%s", got.Stderr)
	for path, want := range map[string]os.FileMode{dir: 0o755, sub: 0o700} {
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, st.Mode().Perm(), path)
	}
}

// TestOutputFileOpenedByName: the command's output file opened by name
// inside the transaction is the host file its descriptor writes to, not a
// staged copy: the writes through both reach it, in order, as natively.
func TestOutputFileOpenedByName(t *testing.T) {
	script := `echo a; echo b >> log; echo c; echo d >> log`
	var got [2]string
	for i, m := range []mode{native, transaction} {
		dir := t.TempDir()
		out, err := os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		cmd := newCmd(ctx, t, m, command{Argv: []string{"sh", "-c", script}, Dir: dir})
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = out, &stderr
		_ = cmd.Run()
		cancel()
		out.Close()
		require.Equal(t, 0, statusOf(cmd.ProcessState), "%s: stderr:\n%s", m, stderr.String())
		b, err := os.ReadFile(filepath.Join(dir, "log"))
		require.NoError(t, err)
		got[i] = string(b)
	}
	assert.Equal(t, "a\nb\nc\nd\n", got[0])
	assert.Equal(t, got[0], got[1])
}

// TestDescriptorRepliesUnderSignals: an open answered with a descriptor
// (ADDFD) waits in the supervisor until the caller has taken it; a signal
// to the supervisor's thread in that wait (SIGCHLD of the traced tree, the
// Go runtime's SIGURG preemption) used to let the caller's open "succeed"
// without a descriptor. Every thread of txexec is sent SIGURG (which Go
// programs take as a preemption request) without pause while the command
// opens a file many times: each open must give a descriptor of that file.
func TestDescriptorRepliesUnderSignals(t *testing.T) {
	requireTools(t, "python3")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	const script = `
import os
want = os.stat("f").st_ino
bad = 0
for i in range(20000):
    fd = os.open("f", os.O_RDONLY)
    if fd < 3 or os.fstat(fd).st_ino != want:
        bad += 1
    else:
        os.close(fd)
print("bad", bad)
`
	for _, m := range underTxexec {
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		cmd := newCmd(ctx, t, m, command{Argv: []string{"python3", "-c", script}, Dir: dir})
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		stop := make(chan struct{})
		pelted := make(chan int)
		go func() {
			sent := 0
			for {
				select {
				case <-stop:
					pelted <- sent
					return
				default:
				}
				tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
				for _, task := range tasks {
					if tid, err := strconv.Atoi(task.Name()); err == nil && syscall.Tgkill(cmd.Process.Pid, tid, syscall.SIGURG) == nil {
						sent++
					}
				}
				time.Sleep(50 * time.Microsecond)
			}
		}()
		err := cmd.Wait()
		close(stop)
		sent := <-pelted
		cancel()
		require.NoError(t, err, "%s: %s", m, stderr.String())
		require.Greater(t, sent, 1000, "signals sent")
		assert.Equal(t, "bad 0\n", stdout.String(), m.String())
	}
}

// TestOtherProcessFDLinksStayInTransaction: /proc/PID/fd/N of a process
// outside the transaction, or of another process in it, leads to the view
// object too: writing a host file through it is staged like any other
// write (kept at commit, dropped at abort), not done to the host at once.
// A caller that may not inspect the process gets Linux's error.
func TestOtherProcessFDLinksStayInTransaction(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	dir := t.TempDir()
	hostFile := filepath.Join(dir, "held.txt")
	require.NoError(t, os.WriteFile(hostFile, []byte("original\n"), 0o644))

	// An outside process holding the file open read-only on fd 7.
	holder := exec.Command("sh", "-c", "exec 7<"+hostFile+"; exec sleep 60")
	require.NoError(t, holder.Start())
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	link := fmt.Sprintf("/proc/%d/fd/7", holder.Process.Pid)
	waitFor(t, "the holder's descriptor", func() bool { _, err := os.Readlink(link); return err == nil })

	write := command{Argv: []string{"sh", "-c", "echo through-outside-fd > " + link}, Dir: dir}
	write.TxArgs = []string{"--on-exit=abort"}
	r := run(t, transaction, write)
	require.Contains(t, r.Stderr, "aborted", r.Stderr)
	got, err := os.ReadFile(hostFile)
	require.NoError(t, err)
	assert.Equal(t, "original\n", string(got), "an aborted transaction wrote the host through /proc/PID/fd")

	write.TxArgs = nil
	r = run(t, transaction, write)
	require.Equal(t, 0, r.Status, r.Stderr)
	got, err = os.ReadFile(hostFile)
	require.NoError(t, err)
	assert.Equal(t, "through-outside-fd\n", string(got), "committed")

	// Another process of the same transaction: the writer goes through the
	// reader's descriptor; aborted, nothing reaches the host.
	inside := command{Dir: dir, TxArgs: []string{"--on-exit=abort"}, Argv: []string{"sh", "-c",
		`(exec 7<held.txt; exec sleep 5) & pid=$!; while [ ! -e /proc/$pid/fd/7 ]; do sleep 0.01; done; echo inside > /proc/$pid/fd/7; cat held.txt; kill $pid`}}
	r = run(t, transaction, inside)
	assert.Equal(t, "inside\n", r.Stdout, "the write shows inside the transaction")
	got, err = os.ReadFile(hostFile)
	require.NoError(t, err)
	assert.Equal(t, "through-outside-fd\n", string(got), "aborted")

	// An unprivileged caller may not follow root's process's links.
	requireTools(t, "setpriv")
	priv := command{Dir: "/", Argv: []string{"setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c", "cat " + link + " 2>&1 >/dev/null | sed 's/^[^:]*: //'"}}
	want := run(t, native, priv)
	require.NotEmpty(t, want.Stdout)
	for _, m := range underTxexec {
		assert.Equal(t, want.Stdout, run(t, m, priv).Stdout, m.String())
	}
}
