package vfs

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// manifest describes every object under dir exactly — type, mode, owner,
// size, link count, inode, all three times (atime included), content hash,
// link target, extended attributes — read without touching any of them:
// through a noatime clone of the mount tree (readlink has no O_NOATIME).
func manifest(t *testing.T, dir string) string {
	t.Helper()
	rfd, noatime, err := openRoot()
	require.NoError(t, err)
	defer unix.Close(rfd)
	if !noatime {
		t.Skip("needs a noatime clone of the mount tree (CAP_SYS_ADMIN) to read the host without touching atimes")
	}
	var b strings.Builder
	var walk func(rel string)
	walk = func(rel string) {
		p := "." + filepath.Join(dir, rel)
		var st unix.Stat_t
		require.NoError(t, unix.Fstatat(rfd, p, &st, unix.AT_SYMLINK_NOFOLLOW), p)
		fmt.Fprintf(&b, "%s mode=%o uid=%d gid=%d size=%d nlink=%d ino=%d atime=%d.%09d mtime=%d.%09d ctime=%d.%09d",
			rel, st.Mode, st.Uid, st.Gid, st.Size, st.Nlink, st.Ino,
			st.Atim.Sec, st.Atim.Nsec, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		var children []string
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			fd, err := unix.Openat(rfd, p, unix.O_RDONLY|unix.O_NOATIME|unix.O_CLOEXEC, 0)
			require.NoError(t, err, p)
			f := os.NewFile(uintptr(fd), p)
			h := sha256.New()
			_, err = f.WriteTo(h)
			f.Close()
			require.NoError(t, err, p)
			fmt.Fprintf(&b, " sha=%x", h.Sum(nil)[:8])
		case unix.S_IFLNK:
			buf := make([]byte, unix.PathMax)
			n, err := unix.Readlinkat(rfd, p, buf)
			require.NoError(t, err, p)
			fmt.Fprintf(&b, " -> %s", buf[:n])
		case unix.S_IFDIR:
			fd, err := unix.Openat(rfd, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			require.NoError(t, err, p)
			ents, err := readHostDir(fd)
			unix.Close(fd)
			require.NoError(t, err, p)
			for _, e := range ents {
				children = append(children, e.Name)
			}
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(filepath.Join(dir, rel), buf); err == nil && n > 0 {
			fmt.Fprintf(&b, " xattrs=%q", buf[:n])
		}
		b.WriteByte('\n')
		sort.Strings(children)
		for _, c := range children {
			walk(filepath.Join(rel, c))
		}
	}
	walk(".")
	return b.String()
}

// oldTimes gives every object under dir an atime older than its mtime, so
// that a read would update the atime (relatime) — a read the view lets
// through to the host would show.
func oldTimes(t *testing.T, dir string) {
	t.Helper()
	var paths []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	}))
	// Children first: setting a directory's times after its children's
	// keeps them.
	for i := len(paths) - 1; i >= 0; i-- {
		ts := []unix.Timespec{{Sec: 978307200}, {Sec: 1009843200}}
		require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, paths[i], ts, unix.AT_SYMLINK_NOFOLLOW))
	}
}

// TestManifestSeesReads shows that the isolation test below can fail: a
// plain read on the host changes the manifest (atime).
func TestManifestSeesReads(t *testing.T) {
	dir := t.TempDir()
	hostTree(dir)
	oldTimes(t, dir)
	before := manifest(t, dir)
	_, err := os.ReadFile(filepath.Join(dir, "f"))
	require.NoError(t, err)
	assert.NotEqual(t, before, manifest(t, dir), "a read on the host did not show in the manifest")
}

// TestIsolation: whatever the transaction does, the host tree stays
// byte-identical — contents, names, modes, owners, times (atime included).
func TestIsolation(t *testing.T) {
	ops := []struct {
		name string
		do   func(e *env) error
	}{
		{"create", func(e *env) error { e.create("new", "n", 0o644); return nil }},
		{"create in host dir", func(e *env) error { e.create("d/new", "n", 0o644); return nil }},
		{"write host file", func(e *env) error { e.appendTo("g", "more"); return nil }},
		{"write hard-linked host file", func(e *env) error { e.appendTo("linked", "more"); return nil }},
		{"truncate", func(e *env) error { return e.v.Truncate(e.c, e.c.Cwd, "g", 1) }},
		{"open O_TRUNC", func(e *env) error {
			fd, err := e.v.Open(e.c, e.c.Cwd, "f", OpenHow{Flags: unix.O_WRONLY | unix.O_TRUNC})
			if err == nil {
				unix.Close(fd)
			}
			return err
		}},
		{"read", func(e *env) error { _, err := e.read("f"); return err }},
		{"read hard-linked", func(e *env) error { _, err := e.read("d/linked2"); return err }},
		{"list", func(e *env) error { _, err := e.listing("d"); return err }},
		{"list after a change", func(e *env) error {
			e.create("d/new", "n", 0o644)
			_, err := e.listing("d")
			return err
		}},
		{"stat and readlink", func(e *env) error {
			if _, err := e.v.Stat(e.c, e.c.Cwd, "sl", 0); err != nil {
				return err
			}
			_, err := e.v.Readlink(e.c, e.c.Cwd, "sl")
			return err
		}},
		{"remove file", func(e *env) error { return e.v.Unlink(e.c, e.c.Cwd, "w", 0) }},
		{"remove tree", func(e *env) error {
			if err := e.v.Unlink(e.c, e.c.Cwd, "gone/old", 0); err != nil {
				return err
			}
			return e.v.Unlink(e.c, e.c.Cwd, "gone", unix.AT_REMOVEDIR)
		}},
		{"rename file", func(e *env) error { return e.v.Rename(e.c, e.c.Cwd, "f", e.c.Cwd, "e/f", 0) }},
		{"rename dir over empty dir", func(e *env) error { return e.v.Rename(e.c, e.c.Cwd, "d", e.c.Cwd, "e", 0) }},
		{"exchange", func(e *env) error {
			return e.v.Rename(e.c, e.c.Cwd, "f", e.c.Cwd, "d", unix.RENAME_EXCHANGE)
		}},
		{"chmod file", func(e *env) error { return e.v.Chmod(e.c, e.c.Cwd, "f", 0o600, 0) }},
		{"chmod dir", func(e *env) error { return e.v.Chmod(e.c, e.c.Cwd, "d", 0o700, 0) }},
		{"chown", func(e *env) error { return e.v.Chown(e.c, e.c.Cwd, "f", 1000, 1000, 0) }},
		{"utimes", func(e *env) error {
			return e.v.Utimens(e.c, e.c.Cwd, "f", &[2]unix.Timespec{{Sec: 5}, {Sec: 6}}, 0)
		}},
		{"utimes now on dir", func(e *env) error { return e.v.Utimens(e.c, e.c.Cwd, "d", nil, 0) }},
		{"setxattr", func(e *env) error {
			return e.v.Setxattr(e.c, e.c.Cwd, "f", XattrOp{}, "user.k", []byte("v"), 0)
		}},
		{"mkdir, symlink, mknod, link", func(e *env) error {
			return errors.Join(e.v.Mkdir(e.c, e.c.Cwd, "d/nd", 0o755),
				e.v.Symlink(e.c, "x", e.c.Cwd, "d/ns"),
				e.v.Mknod(e.c, e.c.Cwd, "d/nf", unix.S_IFIFO|0o644, 0),
				e.v.Link(e.c, e.c.Cwd, "f", e.c.Cwd, "d/f-link", 0))
		}},
		{"fifo opened in the view", func(e *env) error {
			fd, err := e.v.Open(e.c, e.c.Cwd, "fifo", OpenHow{Flags: unix.O_RDWR})
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if _, err := unix.Write(fd, []byte("through the fifo")); err != nil {
				return err
			}
			_, err = unix.Read(fd, make([]byte, 100))
			return err
		}},
		{"O_TMPFILE and link", func(e *env) error {
			fd, err := e.v.Open(e.c, e.c.Cwd, "d", OpenHow{Flags: unix.O_TMPFILE | unix.O_WRONLY, Mode: 0o600})
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			h, err := e.v.HandleOf(e.c, mustDup(fd))
			if err != nil {
				return err
			}
			defer h.Release()
			return e.v.Link(e.c, h, "", e.c.Cwd, "d/tmp-named", unix.AT_EMPTY_PATH)
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			e := newEnv(t, func(dir string) { hostTree(dir) })
			oldTimes(t, e.dir)
			before := manifest(t, e.dir)
			require.NoError(t, op.do(e))
			assert.Equal(t, before, manifest(t, e.dir))
			// Reading everything back through the view changes nothing
			// either (atime).
			walkView(t, e, ".")
			assert.Equal(t, before, manifest(t, e.dir))
		})
	}
}

func mustDup(fd int) int {
	d, err := unix.Dup(fd)
	if err != nil {
		panic(err)
	}
	return d
}

// walkView reads every file and lists every directory of the view.
func walkView(t *testing.T, e *env, dir string) {
	t.Helper()
	ents, err := e.listing(dir)
	require.NoError(t, err, dir)
	for _, d := range ents {
		p := dir + "/" + d.Name
		switch d.Type {
		case unix.DT_DIR:
			walkView(t, e, p)
		case unix.DT_REG:
			_, err := e.read(p)
			assert.NoError(t, err, p)
		case unix.DT_LNK:
			_, err := e.v.Readlink(e.c, e.c.Cwd, p)
			assert.NoError(t, err, p)
		}
	}
}

// TestValidate: a host change to anything the transaction read makes
// Validate fail; a change to anything it did not read does not.
func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		read     func(e *env)
		change   func(dir string) error
		conflict bool
	}{
		{"file read then modified", func(e *env) { e.read("f") },
			func(dir string) error { return appendHost(filepath.Join(dir, "f"), "x") }, true},
		{"file stat then chmod", func(e *env) { e.v.Stat(e.c, e.c.Cwd, "f", 0) },
			func(dir string) error { return os.Chmod(filepath.Join(dir, "f"), 0o600) }, true},
		{"file stat then touched", func(e *env) { e.v.Stat(e.c, e.c.Cwd, "f", 0) },
			func(dir string) error {
				return os.Chtimes(filepath.Join(dir, "f"), time.Unix(1, 0), time.Unix(2, 0))
			}, true},
		{"file read then replaced", func(e *env) { e.read("f") },
			func(dir string) error {
				if err := os.WriteFile(filepath.Join(dir, "f.new"), []byte("host file\n"), 0o644); err != nil {
					return err
				}
				return os.Rename(filepath.Join(dir, "f.new"), filepath.Join(dir, "f"))
			}, true},
		{"file read then removed", func(e *env) { e.read("d/x") },
			func(dir string) error { return os.Remove(filepath.Join(dir, "d/x")) }, true},
		{"dir listed then entry created", func(e *env) { e.listing("d") },
			func(dir string) error { return os.WriteFile(filepath.Join(dir, "d/new"), nil, 0o644) }, true},
		{"dir listed then entry removed", func(e *env) { e.listing("d") },
			func(dir string) error { return os.Remove(filepath.Join(dir, "d/x")) }, true},
		{"merged listing then entry created", func(e *env) {
			e.create("d/mine", "m", 0o644)
			e.listing("d")
		}, func(dir string) error { return os.WriteFile(filepath.Join(dir, "d/new"), nil, 0o644) }, true},
		{"absent name looked up then created", func(e *env) { e.v.Stat(e.c, e.c.Cwd, "nope", 0) },
			func(dir string) error { return os.WriteFile(filepath.Join(dir, "nope"), nil, 0o644) }, true},
		{"absent name looked up through a symlink then created", func(e *env) {
			e.must(e.v.Symlink(e.c, "target", e.c.Cwd, "ln"), "symlink")
			e.v.Stat(e.c, e.c.Cwd, "ln", 0)
		}, func(dir string) error { return os.WriteFile(filepath.Join(dir, "target"), nil, 0o644) }, true},
		{"created over an absent name that appears", func(e *env) { e.create("nope", "mine", 0o644) },
			func(dir string) error { return os.WriteFile(filepath.Join(dir, "nope"), nil, 0o644) }, true},
		{"copied up file then modified", func(e *env) { e.appendTo("g", "tx") },
			func(dir string) error { return appendHost(filepath.Join(dir, "g"), "host") }, true},
		{"removed file modified on the host", func(e *env) { e.must(e.v.Unlink(e.c, e.c.Cwd, "w", 0), "unlink") },
			func(dir string) error { return os.Remove(filepath.Join(dir, "w")) }, true},
		{"unread file modified", func(e *env) { e.read("f") },
			func(dir string) error { return appendHost(filepath.Join(dir, "g"), "x") }, false},
		{"entry created in an unlisted dir", func(e *env) { e.v.Stat(e.c, e.c.Cwd, "d/x", 0) },
			func(dir string) error { return os.WriteFile(filepath.Join(dir, "d/other"), nil, 0o644) }, false},
		{"unrelated dir changed", func(e *env) { e.listing("d") },
			func(dir string) error { return os.WriteFile(filepath.Join(dir, "e/new"), nil, 0o644) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, hostTree)
			tt.read(e)
			require.NoError(t, e.v.Validate(nil), "before the host changed")
			require.NoError(t, tt.change(e.dir))
			err := e.v.Validate(nil)
			if !tt.conflict {
				assert.NoError(t, err)
				return
			}
			var ce *ConflictError
			if assert.ErrorAs(t, err, &ce) {
				assert.True(t, strings.HasPrefix(ce.Path, e.dir), "conflict path %q outside the tree", ce.Path)
			}
		})
	}
}

func appendHost(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

// TestFifoWithOutside: a host FIFO opened in the view is the host FIFO —
// a process outside the transaction reads what the transaction writes —
// and the I/O leaves its times alone; the time of the write reaches the
// host only through the journal.
func TestFifoWithOutside(t *testing.T) {
	e := newEnv(t, hostTree)
	oldTimes(t, e.dir)
	before := manifest(t, e.dir)
	got := make(chan string, 1)
	go func() {
		// O_NOATIME: the outside reader's own read must not count.
		fd, err := unix.Open(filepath.Join(e.dir, "fifo"), unix.O_RDONLY|unix.O_NOATIME|unix.O_CLOEXEC, 0)
		if err != nil {
			got <- err.Error()
			return
		}
		f := os.NewFile(uintptr(fd), "fifo")
		defer f.Close()
		var b strings.Builder
		_, err = f.WriteTo(&b)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- b.String()
	}()
	fd, err := e.v.Open(e.c, e.c.Cwd, "fifo", OpenHow{Flags: unix.O_WRONLY})
	require.NoError(t, err)
	_, err = unix.Write(fd, []byte("to the outside\n"))
	require.NoError(t, err)
	unix.Close(fd)
	assert.Equal(t, "to the outside\n", <-got)
	assert.Equal(t, before, manifest(t, e.dir))
	st, err := e.v.Stat(e.c, e.c.Cwd, "fifo", 0)
	require.NoError(t, err)
	assert.Greater(t, st.Mtim.Sec, int64(1009843200), "the view shows the write's time")
	require.NoError(t, e.v.Validate(nil))
	var set bool
	for _, op := range e.v.Journal() {
		if op.Path == filepath.Join(e.dir, "fifo") && op.Attrs != 0 {
			set = op.Mtime.Sec == st.Mtim.Sec
		}
	}
	assert.True(t, set, "no setattr of the FIFO's mtime in the journal")
}

// TestFifoReadTruncIsNoWrite: O_TRUNC is ignored for a FIFO (may_open), so
// a read-only open with it does not count as a write for the FIFO's times.
func TestFifoReadTruncIsNoWrite(t *testing.T) {
	e := newEnv(t, hostTree)
	oldTimes(t, e.dir)
	fd, err := e.v.Open(e.c, e.c.Cwd, "fifo", OpenHow{Flags: unix.O_RDONLY | unix.O_TRUNC | unix.O_NONBLOCK})
	require.NoError(t, err)
	unix.Close(fd)
	st, err := e.v.Stat(e.c, e.c.Cwd, "fifo", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1009843200), st.Mtim.Sec, "the host FIFO's old time")
	assert.False(t, e.v.Changed())
}

// TestFifoOpenEndsWithCaller: an open of a FIFO waits for the other end,
// but not longer than the caller lives (the supervisor must not stay
// blocked when the caller is killed).
func TestFifoOpenEndsWithCaller(t *testing.T) {
	e := newEnv(t, hostTree)
	cmd := exec.Command("sleep", "1000")
	require.NoError(t, cmd.Start())
	c := *e.c
	c.Tid, c.Tgid = cmd.Process.Pid, cmd.Process.Pid
	done := make(chan error, 1)
	go func() {
		fd, err := e.v.Open(&c, e.c.Cwd, "fifo", OpenHow{Flags: unix.O_WRONLY})
		if err == nil {
			unix.Close(fd)
		}
		done <- err
	}()
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	// Returns once the caller is gone (before that it may not): the test
	// would time out otherwise.
	err := <-done
	assert.ErrorIs(t, err, unix.EINTR)
	// The view still works, and nobody is left holding the FIFO.
	_, err = e.v.Stat(e.c, e.c.Cwd, "fifo", 0)
	assert.NoError(t, err)
}

// TestHostSwapToSymlinkDooms: a name the transaction checked (lstat: a
// regular file) and that the host then swaps for a symlink — which on most
// file systems gets the freed inode number back — is never followed by the
// transaction's later open: the open fails and the transaction is doomed
// with a conflict on that path (the TOCTTOU attacker is serialized first).
func TestHostSwapToSymlinkDooms(t *testing.T) {
	for _, flags := range []int{unix.O_WRONLY | unix.O_TRUNC, unix.O_RDONLY} {
		t.Run(fmt.Sprintf("flags=%#x", flags), func(t *testing.T) {
			e := newEnv(t, func(dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "report"), []byte("old\n"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("secret\n"), 0o600))
			})
			st, err := e.v.Stat(e.c, e.c.Cwd, "report", unix.AT_SYMLINK_NOFOLLOW)
			require.NoError(t, err)
			require.Equal(t, uint32(unix.S_IFREG), st.Mode&unix.S_IFMT)
			report := filepath.Join(e.dir, "report")
			require.NoError(t, os.Remove(report))
			require.NoError(t, os.Symlink(filepath.Join(e.dir, "secret"), report))

			fd, err := e.v.Open(e.c, e.c.Cwd, "report", OpenHow{Flags: uint64(flags)})
			if err == nil {
				unix.Close(fd)
			}
			require.Error(t, err, "the open must not reach the swapped-in symlink's target")
			doom := e.v.Doomed()
			require.Error(t, doom)
			assert.Contains(t, doom.Error(), "conflict on "+report)
			secret, err := os.ReadFile(filepath.Join(e.dir, "secret"))
			require.NoError(t, err)
			assert.Equal(t, "secret\n", string(secret))
		})
	}
}

// TestXattrPermissions: the supervisor sets extended attributes with its own
// privileges, so it must refuse, as Linux does, the namespaces an
// unprivileged owner may not write — file capabilities above all, which
// would otherwise let a user give a program of theirs root powers at commit.
func TestXattrPermissions(t *testing.T) {
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "mine"), []byte("x"), 0o755))
		require.NoError(t, os.Chown(filepath.Join(dir, "mine"), 1000, 1000))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "theirs"), []byte("x"), 0o644))
		require.NoError(t, os.Chmod(filepath.Join(dir, "theirs"), 0o666)) // past the umask
	})
	user := e.as(1000, 1000)
	capV3 := make([]byte, 24) // a vfs_ns_cap_data: version 3, no capabilities
	capV3[3] = 3
	tests := []struct {
		name, file, attr string
		c                *Caller
		want             error
	}{
		{"user namespace, owner", "mine", "user.k", user, nil},
		{"user namespace, writable by all", "theirs", "user.k", user, nil},
		{"file capabilities need CAP_SETFCAP", "mine", "security.capability", user, unix.EPERM},
		{"other security attributes need CAP_SYS_ADMIN", "mine", "security.evm", user, unix.EPERM},
		{"trusted needs CAP_SYS_ADMIN", "mine", "trusted.k", user, unix.EPERM},
		{"ACL of another's file", "theirs", "system.posix_acl_access", user, unix.EPERM},
		{"unknown namespace", "mine", "bogus.k", user, unix.EOPNOTSUPP},
		{"root sets trusted", "mine", "trusted.k", e.c, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value := []byte("v")
			if tt.attr == "security.capability" {
				value = capV3
			}
			err := e.v.Setxattr(tt.c, e.c.Cwd, tt.file, XattrOp{}, tt.attr, value, 0)
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
}

// TestXattrThroughDirFD: a descriptor of a host directory is the host's
// (directories are not copied up), so the attributes the transaction set
// on it are found only through the view (fgetxattr, flistxattr).
func TestXattrThroughDirFD(t *testing.T) {
	e := newEnv(t, func(dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755)) })
	e.must(e.v.Setxattr(e.c, e.c.Cwd, "d", XattrOp{}, "user.k", []byte("v"), 0), "setxattr")
	fd, err := e.v.Open(e.c, e.c.Cwd, "d", OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY})
	e.must(err, "open d")
	defer unix.Close(fd)
	n, err := unix.Flistxattr(fd, make([]byte, 100))
	require.NoError(t, err)
	require.Zero(t, n, "the descriptor is the host directory's")
	h, err := e.v.HandleOf(e.c, fd)
	e.must(err, "handle")
	defer h.Release()
	list, _, err := e.v.Listxattr(e.c, h, "", XattrOp{EmptyAt: true}, 100)
	require.NoError(t, err)
	assert.Equal(t, "user.k\x00", string(list))
	value, _, err := e.v.Getxattr(e.c, h, "", XattrOp{EmptyAt: true}, "user.k", 100)
	require.NoError(t, err)
	assert.Equal(t, "v", string(value))
}

// TestTextBusy: a host program that a process is executing cannot be
// opened for writing or truncated (ETXTBSY), as on Linux, though the write
// would go to a staged copy; once it exits, it can.
func TestTextBusy(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	prog, err := os.ReadFile(sleep)
	require.NoError(t, err)
	e := newEnv(t, func(dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "prog"), prog, 0o755))
	})
	cmd := exec.Command(filepath.Join(e.dir, "prog"), "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	_, err = e.v.Open(e.c, e.c.Cwd, "prog", OpenHow{Flags: unix.O_WRONLY})
	assert.ErrorIs(t, err, unix.ETXTBSY, "open for writing")
	_, err = e.v.Open(e.c, e.c.Cwd, "prog", OpenHow{Flags: unix.O_RDONLY | unix.O_TRUNC})
	assert.ErrorIs(t, err, unix.ETXTBSY, "open with O_TRUNC")
	assert.ErrorIs(t, e.v.Truncate(e.c, e.c.Cwd, "prog", 0), unix.ETXTBSY, "truncate")
	// Changing its mode is no write: allowed, as on Linux.
	require.NoError(t, e.v.Chmod(e.c, e.c.Cwd, "prog", 0o700, 0))
	_, err = e.v.Open(e.c, e.c.Cwd, "prog", OpenHow{Flags: unix.O_RDWR})
	assert.ErrorIs(t, err, unix.ETXTBSY, "open for writing after chmod")
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	fd, err := e.v.Open(e.c, e.c.Cwd, "prog", OpenHow{Flags: unix.O_WRONLY})
	require.NoError(t, err, "open for writing once it exited")
	unix.Close(fd)
}
