package e2e

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// escapeRoutes are the routes of testdata/escape.c around a transaction's
// view, each an attempt to change a host file (its data, mode, flags or
// extended attributes), a process outside, the mount table, a block device
// or a kernel setting. Some are refused by the filter (i386, x32, clone3),
// some by the supervisor (ptrace, process_vm_writev, pidfd_getfd of
// outsiders), some follow --unsupported (io_uring, file handles, mount,
// namespaces, /proc/PID/mem of outsiders, block-device writes, /proc/sys,
// attribute ioctls that cannot be staged), and the rest land in the view
// (the chroot climb, /proc/PID/root|cwd|fd, MAP_SHARED, chattr through a
// read-only descriptor).
var escapeRoutes = []string{
	"io_uring", "handle", "i386", "x32",
	"proc-root", "proc-cwd", "proc-fd", "pidfd-getfd",
	"ptrace", "vm-writev", "proc-mem",
	"chroot", "unshare", "clone-ns", "clone3-ns", "mount",
	"mmap-shared", "attr-ioctl", "blockdev", "proc-sys",
}

// TestEscapes is the escape suite: every route, inside txexec
// --on-exit=abort, as root and as an unprivileged user who owns the victim
// (and the outside process the routes reach for), leaves the host as it
// was — the victim's directory (data, modes, owners, inode flags,
// extended attributes), the mounts at and above it, the loop device's
// backing image, the host name — and the outside process alive.
func TestEscapes(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root; the routes need an outside process and a loop device")
	requireTools(t, "gcc", "setpriv", "losetup")
	fixtures := t.TempDir()
	escape := buildC(t, fixtures, "escape", "escape")
	openToOthers(t, fixtures)
	loop, image := setupLoopDevice(t)

	for _, user := range []struct {
		name   string
		uid    int
		prefix []string
	}{{"root", 0, nil}, {"uid 1000", 1000, unprivileged}} {
		t.Run(user.name, func(t *testing.T) {
			for _, route := range escapeRoutes {
				t.Run(route, func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), "work")
					writeFiles(t, dir, map[string]string{"victim": "original\n", "other": "other\n"})
					for _, p := range []string{dir, filepath.Join(dir, "victim"), filepath.Join(dir, "other")} {
						require.NoError(t, os.Chown(p, user.uid, user.uid))
					}
					openToOthers(t, dir)
					t.Cleanup(func() { exec.Command("chattr", "-R", "-i", "-a", dir).Run() })
					victim := filepath.Join(dir, "victim")
					holder := startEscapeHolder(t, user.prefix, escape, victim)

					before := hostState(t, dir, image)
					argv := append(append([]string{}, user.prefix...), escape, route, victim, strconv.Itoa(holder))
					if route == "blockdev" {
						argv[len(argv)-1] = loop
					}
					got := run(t, transaction, command{Argv: argv, Dir: dir, TxArgs: []string{"--on-exit=abort"}})
					require.NotEmpty(t, got.Stdout, "the route ran; stderr:\n%s", got.Stderr)
					assert.NotContains(t, got.Stderr, "internal error", "stdout:\n%s", got.Stdout)
					assert.Equal(t, before, hostState(t, dir, image), "the host changed; stdout:\n%sstderr:\n%s", got.Stdout, got.Stderr)
					assert.NoError(t, syscall.Kill(holder, 0), "the outside process is alive")
					want := escapeExpected[route]
					if user.uid == 0 {
						want = append(want, escapeExpectedForRoot[route]...)
					}
					for _, line := range want {
						assert.Contains(t, got.Stdout, line+"\n")
					}
				})
			}
		})
	}
}

// escapeExpected are answers that do not depend on the policy or the
// user: the filter's, and the view's own.
var escapeExpected = map[string][]string{
	"i386":       {"i386 open: ENOSYS"},
	"x32":        {"x32 openat: ENOSYS"},
	"clone3-ns":  {"clone3-ns clone3: ENOSYS"},
	"attr-ioctl": {"attr-ioctl setflags +A: ok", "attr-ioctl fchmod: ok"},
	"mmap-shared": {"mmap-shared mmap rdonly fd writable: EACCES", "mmap-shared mprotect writable: EACCES",
		"mmap-shared mmap rdwr fd: ok", "mmap-shared msync: ok"},
}

// escapeExpectedForRoot are the refusals root meets, where Linux itself
// refuses an unprivileged user first (EPERM, EACCES) or lets it run in
// its own namespaces.
var escapeExpectedForRoot = map[string][]string{
	"unshare":   {"unshare unshare: EOPNOTSUPP"},
	"clone-ns":  {"clone-ns clone: EOPNOTSUPP"},
	"mount":     {"mount mount private: EOPNOTSUPP", "mount mount tmpfs: EOPNOTSUPP"},
	"blockdev":  {"blockdev open wronly: EOPNOTSUPP", "blockdev BLKZEROOUT: EOPNOTSUPP", "blockdev BLKRRPART: EOPNOTSUPP", "blockdev LOOP_CLR_FD: EOPNOTSUPP"},
	"proc-sys":  {"proc-sys open wronly: EOPNOTSUPP"},
	"proc-mem":  {"proc-mem outside: EOPNOTSUPP", "proc-mem supervisor: EOPNOTSUPP"},
	"ptrace":    {"ptrace outside: EPERM", "ptrace supervisor: EPERM"},
	"vm-writev": {"vm-writev outside: EPERM", "vm-writev supervisor: EPERM"},
	"io_uring":  {"io_uring setup: EOPNOTSUPP"},
	"handle":    {"handle name_to_handle_at: EOPNOTSUPP"},
}

// startEscapeHolder starts, outside any transaction and as the user of
// prefix, a process that holds victim open read-write on descriptor 7 with
// victim's directory as its cwd, and returns its pid.
func startEscapeHolder(t *testing.T, prefix []string, escape, victim string) int {
	t.Helper()
	argv := append(append([]string{}, prefix...), escape, "hold", victim)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the holder's pid")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	return pid
}

// setupLoopDevice attaches a loop device to a 1 MiB image that starts
// with a known block, and returns the device and the image.
func setupLoopDevice(t *testing.T) (string, string) {
	t.Helper()
	image := filepath.Join(t.TempDir(), "loop.img")
	block := []byte(strings.Repeat("ORIGINAL", 512))
	f, err := os.Create(image)
	require.NoError(t, err)
	_, err = f.Write(block)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<20))
	require.NoError(t, f.Close())
	out, err := exec.Command("losetup", "--find", "--show", image).CombinedOutput()
	if err != nil {
		testenv.SkipOrFail(t, "losetup: %v: %s (loop devices unavailable)", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "--detach", dev).Run() })
	return dev, image
}

// hostState is what the routes must not change: dir's tree, with the
// inode flags and extended attributes of its entries; the mounts at dir
// and above it (their propagation, for a route that made them private)
// and any under it; the loop image; the host name.
func hostState(t *testing.T, dir, image string) []string {
	t.Helper()
	state := snapshotTree(t, dir, nil)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range append([]os.DirEntry{nil}, ents...) {
		p := dir
		if e != nil {
			p = filepath.Join(dir, e.Name())
		}
		flags := testenv.InodeFlags(t, p)
		names := make([]byte, 4096)
		n, err := unix.Llistxattr(p, names)
		require.NoError(t, err)
		xattrs := strings.Split(strings.TrimRight(string(names[:n]), "\x00"), "\x00")
		sort.Strings(xattrs)
		state = append(state, fmt.Sprintf("%s flags=%#x xattrs=%q", p, flags, xattrs))
	}
	state = append(state, mountsAround(t, dir)...)
	b, err := os.ReadFile(image)
	require.NoError(t, err)
	state = append(state, fmt.Sprintf("image sha256=%x", sha256.Sum256(b)))
	host, err := os.ReadFile("/proc/sys/kernel/hostname")
	require.NoError(t, err)
	return append(state, "hostname "+strings.TrimSpace(string(host)))
}

// mountsAround lists the mounts (mount point, options, propagation) at
// dir or above it, and under it. Other mounts may come and go with other
// tests.
func mountsAround(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		mp := f[4]
		if under(dir, mp) || under(mp, dir) {
			out = append(out, strings.Join(f[4:], " "))
		}
	}
	return out
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}
