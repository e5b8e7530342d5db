package txn

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
	"txexec/store"
)

func inoOf(t testing.TB, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(path, &st))
	return st.Ino
}

func statOf(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(path, &st))
	return st
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func xattrOf(t *testing.T, path, name string) string {
	t.Helper()
	buf := make([]byte, 256)
	n, err := unix.Lgetxattr(path, name, buf)
	require.NoError(t, err)
	return string(buf[:n])
}

func ts(sec int64) store.Timespec { return store.Timespec{Sec: sec, Nsec: 123_456_789} }

// owner is an owner the tests can chown to: someone else as root, else
// the caller (the only owner an unprivileged chown accepts).
func owner() (uid, gid uint32) {
	if os.Geteuid() == 0 {
		return 1234, 5678
	}
	return uint32(os.Getuid()), uint32(os.Getgid())
}

func TestApplyOps(t *testing.T) {
	uid, gid := owner()
	tests := []struct {
		name    string
		setup   func(t *testing.T, d string) store.RedoOp
		check   func(t *testing.T, d string)
		skipped bool
		wantErr error
	}{
		{
			name: "rename file",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/staged", "new")
				return store.RedoOp{Kind: store.OpRename, Src: d + "/staged", Path: d + "/f", Ino: inoOf(t, d+"/staged")}
			},
			check: func(t *testing.T, d string) {
				assert.Equal(t, "new", readFile(t, d+"/f"))
				assert.NoFileExists(t, d+"/staged")
			},
		},
		{
			name: "rename replaces",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "old")
				writeFile(t, d+"/staged", "new")
				return store.RedoOp{Kind: store.OpRename, Src: d + "/staged", Path: d + "/f", Ino: inoOf(t, d+"/staged")}
			},
			check: func(t *testing.T, d string) { assert.Equal(t, "new", readFile(t, d+"/f")) },
		},
		{
			name: "rename directory",
			setup: func(t *testing.T, d string) store.RedoOp {
				require.NoError(t, os.MkdirAll(d+"/a/sub", 0o755))
				return store.RedoOp{Kind: store.OpRename, Src: d + "/a", Path: d + "/b", Ino: inoOf(t, d+"/a")}
			},
			check: func(t *testing.T, d string) {
				assert.DirExists(t, d+"/b/sub")
				assert.NoDirExists(t, d+"/a")
			},
		},
		{
			name: "rename done already",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "new")
				return store.RedoOp{Kind: store.OpRename, Src: d + "/staged", Path: d + "/f", Ino: inoOf(t, d+"/f")}
			},
			check:   func(t *testing.T, d string) { assert.Equal(t, "new", readFile(t, d+"/f")) },
			skipped: true,
		},
		{
			name: "rename source replaced by a later op",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/a", "later")
				writeFile(t, d+"/b", "moved")
				return store.RedoOp{Kind: store.OpRename, Src: d + "/a", Path: d + "/b", Ino: inoOf(t, d+"/b")}
			},
			check: func(t *testing.T, d string) {
				assert.Equal(t, "later", readFile(t, d+"/a"))
				assert.Equal(t, "moved", readFile(t, d+"/b"))
			},
			skipped: true,
		},
		{
			name: "setxattr on a directory keeps attributes others set",
			setup: func(t *testing.T, d string) store.RedoOp {
				require.NoError(t, os.Mkdir(d+"/dir", 0o755))
				require.NoError(t, unix.Lsetxattr(d+"/dir", "user.other", []byte("theirs"), 0))
				return store.RedoOp{Kind: store.OpSetxattr, Path: d + "/dir", Ino: inoOf(t, d+"/dir"),
					XattrName: "user.mine", XattrValue: []byte("1")}
			},
			check: func(t *testing.T, d string) {
				assert.Equal(t, "1", xattrOf(t, d+"/dir", "user.mine"))
				assert.Equal(t, "theirs", xattrOf(t, d+"/dir", "user.other"))
			},
		},
		{
			name: "removexattr",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				require.NoError(t, unix.Lsetxattr(d+"/f", "user.gone", []byte("v"), 0))
				return store.RedoOp{Kind: store.OpRemovexattr, Path: d + "/f", Ino: inoOf(t, d+"/f"), XattrName: "user.gone"}
			},
			check: func(t *testing.T, d string) {
				_, err := unix.Lgetxattr(d+"/f", "user.gone", make([]byte, 16))
				assert.ErrorIs(t, err, unix.ENODATA)
			},
		},
		{
			name: "removexattr done already",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				return store.RedoOp{Kind: store.OpRemovexattr, Path: d + "/f", Ino: inoOf(t, d+"/f"), XattrName: "user.gone"}
			},
			check: func(t *testing.T, d string) { assert.Equal(t, "x", readFile(t, d+"/f")) },
		},
		{
			name: "setxattr on another object is skipped",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				return store.RedoOp{Kind: store.OpSetxattr, Path: d + "/f", Ino: inoOf(t, d+"/f") + 1000,
					XattrName: "user.mine", XattrValue: []byte("1")}
			},
			check: func(t *testing.T, d string) {
				_, err := unix.Lgetxattr(d+"/f", "user.mine", make([]byte, 16))
				assert.ErrorIs(t, err, unix.ENODATA)
			},
			skipped: true,
		},
		{
			name: "exchange file and directory",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "file")
				require.NoError(t, os.Mkdir(d+"/dir", 0o755))
				return store.RedoOp{Kind: store.OpExchange, Src: d + "/f", Path: d + "/dir",
					Ino: inoOf(t, d+"/f"), Ino2: inoOf(t, d+"/dir")}
			},
			check: func(t *testing.T, d string) {
				assert.Equal(t, "file", readFile(t, d+"/dir"))
				assert.DirExists(t, d+"/f")
			},
		},
		{
			name: "exchange done already",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/a", "was b")
				writeFile(t, d+"/b", "was a")
				return store.RedoOp{Kind: store.OpExchange, Src: d + "/a", Path: d + "/b",
					Ino: inoOf(t, d+"/b"), Ino2: inoOf(t, d+"/a")}
			},
			check: func(t *testing.T, d string) {
				assert.Equal(t, "was b", readFile(t, d+"/a"))
				assert.Equal(t, "was a", readFile(t, d+"/b"))
			},
			skipped: true,
		},
		{
			name: "exchange with one side gone",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/a", "a")
				return store.RedoOp{Kind: store.OpExchange, Src: d + "/a", Path: d + "/b", Ino: inoOf(t, d+"/a"), Ino2: 42}
			},
			check:   func(t *testing.T, d string) { assert.Equal(t, "a", readFile(t, d+"/a")) },
			skipped: true,
		},
		{
			name: "link",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				return store.RedoOp{Kind: store.OpLink, Src: d + "/f", Path: d + "/g", Ino: inoOf(t, d+"/f")}
			},
			check: func(t *testing.T, d string) { assert.Equal(t, inoOf(t, d+"/f"), inoOf(t, d+"/g")) },
		},
		{
			name: "link done already",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				require.NoError(t, os.Link(d+"/f", d+"/g"))
				return store.RedoOp{Kind: store.OpLink, Src: d + "/f", Path: d + "/g", Ino: inoOf(t, d+"/f")}
			},
			check:   func(t *testing.T, d string) { assert.Equal(t, uint64(2), uint64(statOf(t, d+"/f").Nlink)) },
			skipped: true,
		},
		{
			name: "link target replaced by a later op",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				writeFile(t, d+"/g", "other")
				return store.RedoOp{Kind: store.OpLink, Src: d + "/f", Path: d + "/g", Ino: inoOf(t, d+"/f")}
			},
			check:   func(t *testing.T, d string) { assert.Equal(t, "other", readFile(t, d+"/g")) },
			skipped: true,
		},
		{
			name: "unlink",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				return store.RedoOp{Kind: store.OpUnlink, Path: d + "/f", Ino: inoOf(t, d+"/f")}
			},
			check: func(t *testing.T, d string) { assert.NoFileExists(t, d+"/f") },
		},
		{
			name: "unlink symlink, not its target",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/target", "x")
				require.NoError(t, os.Symlink("target", d+"/l"))
				return store.RedoOp{Kind: store.OpUnlink, Path: d + "/l", Ino: inoOf(t, d+"/l")}
			},
			check: func(t *testing.T, d string) {
				assert.FileExists(t, d+"/target")
				_, err := os.Lstat(d + "/l")
				assert.ErrorIs(t, err, fs.ErrNotExist)
			},
		},
		{
			name: "unlink absent",
			setup: func(t *testing.T, d string) store.RedoOp {
				return store.RedoOp{Kind: store.OpUnlink, Path: d + "/f", Ino: 42}
			},
			check:   func(t *testing.T, d string) {},
			skipped: true,
		},
		{
			name: "unlink another inode",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "recreated")
				return store.RedoOp{Kind: store.OpUnlink, Path: d + "/f", Ino: inoOf(t, d+"/f") + 1}
			},
			check:   func(t *testing.T, d string) { assert.FileExists(t, d+"/f") },
			skipped: true,
		},
		{
			name: "unlink directory",
			setup: func(t *testing.T, d string) store.RedoOp {
				require.NoError(t, os.Mkdir(d+"/dir", 0o755))
				return store.RedoOp{Kind: store.OpUnlink, Path: d + "/dir", Ino: inoOf(t, d+"/dir")}
			},
			check:   func(t *testing.T, d string) { assert.DirExists(t, d+"/dir") },
			wantErr: unix.EISDIR,
		},
		{
			name: "rmdir",
			setup: func(t *testing.T, d string) store.RedoOp {
				require.NoError(t, os.Mkdir(d+"/dir", 0o755))
				return store.RedoOp{Kind: store.OpRmdir, Path: d + "/dir", Ino: inoOf(t, d+"/dir")}
			},
			check: func(t *testing.T, d string) { assert.NoDirExists(t, d+"/dir") },
		},
		{
			name: "rmdir absent",
			setup: func(t *testing.T, d string) store.RedoOp {
				return store.RedoOp{Kind: store.OpRmdir, Path: d + "/dir", Ino: 42}
			},
			check:   func(t *testing.T, d string) {},
			skipped: true,
		},
		{
			name: "rmdir not empty",
			setup: func(t *testing.T, d string) store.RedoOp {
				require.NoError(t, os.MkdirAll(d+"/dir/sub", 0o755))
				return store.RedoOp{Kind: store.OpRmdir, Path: d + "/dir", Ino: inoOf(t, d+"/dir")}
			},
			check:   func(t *testing.T, d string) { assert.DirExists(t, d+"/dir/sub") },
			wantErr: unix.ENOTEMPTY,
		},
		{
			name: "setattr everything",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				return store.RedoOp{Kind: store.OpSetattr, Path: d + "/f", Ino: inoOf(t, d+"/f"),
					Attrs: store.AttrMode | store.AttrUID | store.AttrGID | store.AttrAtime | store.AttrMtime,
					Mode:  0o4750, UID: uid, GID: gid, Atime: ts(1_000_000), Mtime: ts(2_000_000)}
			},
			check: func(t *testing.T, d string) {
				st := statOf(t, d+"/f")
				assert.Equal(t, uint32(0o4750), st.Mode&0o7777, "set-user-ID survives the chown before it")
				assert.Equal(t, uid, st.Uid)
				assert.Equal(t, gid, st.Gid)
				assert.Equal(t, unix.Timespec{Sec: 1_000_000, Nsec: 123_456_789}, st.Atim)
				assert.Equal(t, unix.Timespec{Sec: 2_000_000, Nsec: 123_456_789}, st.Mtim)
			},
		},
		{
			name: "setattr only what is flagged",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				require.NoError(t, unix.UtimesNano(d+"/f", []unix.Timespec{{Sec: 5}, {Sec: 6}}))
				return store.RedoOp{Kind: store.OpSetattr, Path: d + "/f", Ino: inoOf(t, d+"/f"),
					Attrs: store.AttrMtime, Mode: 0o777, UID: 1, GID: 1, Atime: ts(1), Mtime: ts(7)}
			},
			check: func(t *testing.T, d string) {
				st := statOf(t, d+"/f")
				assert.Equal(t, uint32(0o644), st.Mode&0o7777)
				assert.Equal(t, uint32(os.Getuid()), st.Uid)
				assert.Equal(t, unix.Timespec{Sec: 5}, st.Atim)
				assert.Equal(t, unix.Timespec{Sec: 7, Nsec: 123_456_789}, st.Mtim)
			},
		},
		{
			name: "setattr symlink itself",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/target", "x")
				require.NoError(t, unix.UtimesNano(d+"/target", []unix.Timespec{{Sec: 5}, {Sec: 6}}))
				require.NoError(t, os.Symlink("target", d+"/l"))
				return store.RedoOp{Kind: store.OpSetattr, Path: d + "/l", Ino: inoOf(t, d+"/l"),
					Attrs: store.AttrMode | store.AttrUID | store.AttrMtime, Mode: 0o600, UID: uid, Mtime: ts(9)}
			},
			check: func(t *testing.T, d string) {
				l, target := statOf(t, d+"/l"), statOf(t, d+"/target")
				assert.Equal(t, uid, l.Uid)
				assert.Equal(t, unix.Timespec{Sec: 9, Nsec: 123_456_789}, l.Mtim)
				assert.Equal(t, uint32(os.Getuid()), target.Uid)
				assert.Equal(t, uint32(0o644), target.Mode&0o7777)
				assert.Equal(t, unix.Timespec{Sec: 6}, target.Mtim)
			},
		},
		{
			name: "setattr another inode",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "x")
				return store.RedoOp{Kind: store.OpSetattr, Path: d + "/f", Ino: inoOf(t, d+"/f") + 1,
					Attrs: store.AttrMode, Mode: 0o600}
			},
			check:   func(t *testing.T, d string) { assert.Equal(t, uint32(0o644), statOf(t, d+"/f").Mode&0o7777) },
			skipped: true,
		},
		{
			name: "copydata keeps the inode and its links",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "a longer old content")
				require.NoError(t, os.Link(d+"/f", d+"/g"))
				writeFile(t, d+"/staged", "new")
				return store.RedoOp{Kind: store.OpCopyData, Src: d + "/staged", Path: d + "/f", Ino: inoOf(t, d+"/f")}
			},
			check: func(t *testing.T, d string) {
				assert.Equal(t, "new", readFile(t, d+"/g"))
				assert.Equal(t, inoOf(t, d+"/f"), inoOf(t, d+"/g"))
				assert.Equal(t, "new", readFile(t, d+"/staged"), "the source stays for a redo")
			},
		},
		{
			name: "copydata another inode",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "old")
				writeFile(t, d+"/staged", "new")
				return store.RedoOp{Kind: store.OpCopyData, Src: d + "/staged", Path: d + "/f", Ino: inoOf(t, d+"/f") + 1}
			},
			check:   func(t *testing.T, d string) { assert.Equal(t, "old", readFile(t, d+"/f")) },
			skipped: true,
		},
		{
			name: "copydata without its staged source",
			setup: func(t *testing.T, d string) store.RedoOp {
				writeFile(t, d+"/f", "old")
				return store.RedoOp{Kind: store.OpCopyData, Src: d + "/staged", Path: d + "/f", Ino: inoOf(t, d+"/f")}
			},
			check:   func(t *testing.T, d string) { assert.Equal(t, "old", readFile(t, d+"/f")) },
			wantErr: unix.ENOENT,
		},
		{
			name: "fsyncdir",
			setup: func(t *testing.T, d string) store.RedoOp {
				return store.RedoOp{Kind: store.OpFsyncDir, Path: d}
			},
			check: func(t *testing.T, d string) {},
		},
		{
			name: "fsyncdir absent",
			setup: func(t *testing.T, d string) store.RedoOp {
				return store.RedoOp{Kind: store.OpFsyncDir, Path: d + "/gone"}
			},
			check:   func(t *testing.T, d string) {},
			skipped: true,
		},
	}
	for _, tt := range tests {
		for _, durable := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/durable=%v", tt.name, durable), func(t *testing.T) {
				d := t.TempDir()
				op := tt.setup(t, d)
				var skips []string
				err := Apply([]store.RedoOp{op}, ApplyOptions{Durable: durable,
					Skipped: func(i int, _ store.RedoOp, why string) { skips = append(skips, why) }})
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
					assert.Contains(t, err.Error(), "apply redo op 0")
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, tt.skipped, len(skips) == 1, "skips: %q", skips)
				tt.check(t, d)
			})
		}
	}
}

func TestCheckOps(t *testing.T) {
	tests := []struct {
		name string
		op   store.RedoOp
		want string // "" when valid
	}{
		{"valid rename", store.RedoOp{Kind: store.OpRename, Src: "/s/1", Path: "/a", Ino: 1}, ""},
		{"valid fsyncdir", store.RedoOp{Kind: store.OpFsyncDir, Path: "/a"}, ""},
		{"valid exchange", store.RedoOp{Kind: store.OpExchange, Src: "/b", Path: "/a", Ino: 1, Ino2: 2}, ""},
		{"exchange without Ino2", store.RedoOp{Kind: store.OpExchange, Src: "/b", Path: "/a", Ino: 1}, "Ino2"},
		{"Ino2 on rename", store.RedoOp{Kind: store.OpRename, Src: "/b", Path: "/a", Ino: 1, Ino2: 2}, "second inode"},
		{"unknown kind", store.RedoOp{Kind: "chmod", Path: "/a", Ino: 1}, "unknown kind"},
		{"relative path", store.RedoOp{Kind: store.OpUnlink, Path: "a", Ino: 1}, "not absolute"},
		{"unclean path", store.RedoOp{Kind: store.OpUnlink, Path: "/a/../b", Ino: 1}, "not absolute and clean"},
		{"root", store.RedoOp{Kind: store.OpRmdir, Path: "/", Ino: 1}, "not absolute"},
		{"rename without source", store.RedoOp{Kind: store.OpRename, Path: "/a", Ino: 1}, "not absolute"},
		{"unlink with source", store.RedoOp{Kind: store.OpUnlink, Src: "/b", Path: "/a", Ino: 1}, "unexpected source"},
		{"no inode", store.RedoOp{Kind: store.OpSetattr, Path: "/a"}, "no expected inode"},
		{"attributes on unlink", store.RedoOp{Kind: store.OpUnlink, Path: "/a", Ino: 1, Attrs: store.AttrMode}, "attributes"},
		{"valid addflags", store.RedoOp{Kind: store.OpAddFlags, Path: "/a", Ino: 1, Mode: store.FlagImmutable | store.FlagAppend}, ""},
		{"addflags without flags", store.RedoOp{Kind: store.OpAddFlags, Path: "/a", Ino: 1}, "inode flags"},
		{"addflags of another flag", store.RedoOp{Kind: store.OpAddFlags, Path: "/a", Ino: 1, Mode: 0x4000}, "inode flags"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckOps([]store.RedoOp{{Kind: store.OpFsyncDir, Path: "/ok"}, tt.op})
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "redo op 1")
			assert.Contains(t, err.Error(), tt.want)
			// Apply refuses the whole list before touching anything.
			assert.Error(t, Apply([]store.RedoOp{tt.op}, ApplyOptions{}))
		})
	}
}

// planFixture builds a host tree and a staging area under a fresh
// directory and returns the plan a transaction would commit for it: it
// renames a directory, replaces a file, removes a file and a directory,
// places a staged directory, links, copies data into a file with two
// links, swaps two files through a temporary name, exchanges a file and a
// directory, and sets attributes.
func planFixture(t *testing.T) (host string, ops []store.RedoOp) {
	t.Helper()
	root := t.TempDir()
	host, stg := root+"/host", root+"/staging"
	for _, d := range []string{host + "/olddir", host + "/emptydir", stg + "/newdir"} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	writeFile(t, host+"/olddir/a.txt", "A")
	writeFile(t, host+"/f.txt", "old f")
	writeFile(t, host+"/gone.txt", "gone")
	writeFile(t, host+"/multi.txt", "old multi")
	require.NoError(t, os.Link(host+"/multi.txt", host+"/multi2.txt"))
	writeFile(t, host+"/x.txt", "X")
	writeFile(t, host+"/y.txt", "Y")
	writeFile(t, host+"/p", "P")
	require.NoError(t, os.Mkdir(host+"/q", 0o755))
	writeFile(t, host+"/q/inside", "in q")
	writeFile(t, stg+"/f.txt", "new f")
	writeFile(t, stg+"/newdir/child.txt", "child")
	require.NoError(t, os.Symlink("child.txt", stg+"/newdir/sym"))
	writeFile(t, stg+"/multi.txt", "new multi, longer than the old one")
	// Fixed times everywhere, so that two fixtures compare equal.
	for _, top := range []string{host, stg} {
		require.NoError(t, filepath.WalkDir(top, func(p string, _ fs.DirEntry, err error) error {
			require.NoError(t, err)
			return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{{Sec: 100}, {Sec: 200}}, unix.AT_SYMLINK_NOFOLLOW)
		}))
	}

	uid, gid := owner()
	ino := func(p string) uint64 { return inoOf(t, p) }
	ops = []store.RedoOp{
		{Kind: store.OpRename, Src: host + "/olddir", Path: host + "/newname", Ino: ino(host + "/olddir")},
		{Kind: store.OpRename, Src: stg + "/f.txt", Path: host + "/f.txt", Ino: ino(stg + "/f.txt")},
		{Kind: store.OpUnlink, Path: host + "/gone.txt", Ino: ino(host + "/gone.txt")},
		{Kind: store.OpRmdir, Path: host + "/emptydir", Ino: ino(host + "/emptydir")},
		{Kind: store.OpRename, Src: stg + "/newdir", Path: host + "/newdir", Ino: ino(stg + "/newdir")},
		{Kind: store.OpLink, Src: host + "/f.txt", Path: host + "/newname/f-link", Ino: ino(stg + "/f.txt")},
		{Kind: store.OpCopyData, Src: stg + "/multi.txt", Path: host + "/multi.txt", Ino: ino(host + "/multi.txt")},
		{Kind: store.OpSetattr, Path: host + "/multi.txt", Ino: ino(host + "/multi.txt"),
			Attrs: store.AttrMode | store.AttrMtime, Mode: 0o640, Mtime: ts(300)},
		{Kind: store.OpSetattr, Path: host + "/f.txt", Ino: ino(stg + "/f.txt"),
			Attrs: store.AttrMode | store.AttrUID | store.AttrGID | store.AttrMtime,
			Mode:  0o600, UID: uid, GID: gid, Mtime: ts(400)},
		{Kind: store.OpSetattr, Path: host + "/newdir/sym", Ino: ino(stg + "/newdir/sym"),
			Attrs: store.AttrUID | store.AttrMtime, UID: uid, Mtime: ts(500)},
		{Kind: store.OpRename, Src: host + "/x.txt", Path: host + "/swap.tmp", Ino: ino(host + "/x.txt")},
		{Kind: store.OpRename, Src: host + "/y.txt", Path: host + "/x.txt", Ino: ino(host + "/y.txt")},
		{Kind: store.OpRename, Src: host + "/swap.tmp", Path: host + "/y.txt", Ino: ino(host + "/x.txt")},
		{Kind: store.OpExchange, Src: host + "/p", Path: host + "/q", Ino: ino(host + "/p"), Ino2: ino(host + "/q")},
		{Kind: store.OpSetattr, Path: host + "/newname", Ino: ino(host + "/olddir"),
			Attrs: store.AttrMode | store.AttrMtime, Mode: 0o750, Mtime: ts(600)},
		{Kind: store.OpSetattr, Path: host + "/newdir", Ino: ino(stg + "/newdir"),
			Attrs: store.AttrMtime, Mtime: ts(700)},
		{Kind: store.OpFsyncDir, Path: host},
	}
	require.NoError(t, CheckOps(ops))
	return host, ops
}

// snapshot describes the tree under root, one line per object: type,
// permissions, owner, size, content hash or link target, mtime, and which
// earlier path it is a hard link of. Inode numbers and the root's own
// times are left out, so that trees built separately compare equal.
func snapshot(t *testing.T, root string) []string {
	t.Helper()
	var lines []string
	firstPath := map[uint64]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		require.NoError(t, err)
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		st := statOf(t, p)
		what := ""
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			what = fmt.Sprintf("file %x", sha256.Sum256([]byte(readFile(t, p))))
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			what = "symlink " + target
		case unix.S_IFDIR:
			what = "dir"
		default:
			what = fmt.Sprintf("type %o", st.Mode&unix.S_IFMT)
		}
		link := ""
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if first, ok := firstPath[st.Ino]; ok {
				link = " link-of " + first
			} else {
				firstPath[st.Ino] = rel
			}
		}
		lines = append(lines, fmt.Sprintf("%s: %s mode %o owner %d:%d size %d mtime %d.%09d nlink %d%s",
			rel, what, st.Mode&0o7777, st.Uid, st.Gid, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Nlink, link))
		return nil
	}))
	return lines
}

func reference(t *testing.T) []string {
	t.Helper()
	host, ops := planFixture(t)
	var skips []string
	require.NoError(t, Apply(ops, ApplyOptions{Durable: true,
		Skipped: func(i int, op store.RedoOp, why string) { skips = append(skips, why) }}))
	assert.Empty(t, skips, "a first write-through on an untouched host skips nothing")
	return snapshot(t, host)
}

func TestApplyPlan(t *testing.T) {
	host, ops := planFixture(t)
	require.NoError(t, Apply(ops, ApplyOptions{Durable: true}))
	uid, gid := owner()

	assert.Equal(t, "A", readFile(t, host+"/newname/a.txt"))
	assert.Equal(t, "new f", readFile(t, host+"/newname/f-link"))
	assert.Equal(t, inoOf(t, host+"/f.txt"), inoOf(t, host+"/newname/f-link"))
	f := statOf(t, host+"/f.txt")
	assert.Equal(t, uint32(0o600), f.Mode&0o7777)
	assert.Equal(t, [2]uint32{uid, gid}, [2]uint32{f.Uid, f.Gid})
	assert.Equal(t, "new multi, longer than the old one", readFile(t, host+"/multi2.txt"))
	assert.Equal(t, inoOf(t, host+"/multi.txt"), inoOf(t, host+"/multi2.txt"))
	assert.Equal(t, "Y", readFile(t, host+"/x.txt"))
	assert.Equal(t, "X", readFile(t, host+"/y.txt"))
	assert.Equal(t, "child", readFile(t, host+"/newdir/sym"))
	assert.Equal(t, "in q", readFile(t, host+"/p/inside"))
	assert.Equal(t, "P", readFile(t, host+"/q"))
	assert.Equal(t, uint32(0o750), statOf(t, host+"/newname").Mode&0o7777)
	for _, gone := range []string{"/olddir", "/gone.txt", "/emptydir", "/swap.tmp"} {
		_, err := os.Lstat(host + gone)
		assert.ErrorIs(t, err, fs.ErrNotExist, gone)
	}
	assert.Equal(t, reference(t), snapshot(t, host), "fixtures built apart compare equal")
}

// TestApplyIdempotent applies every prefix of the plan, then the whole
// plan twice: the tree must be the one a single application gives.
func TestApplyIdempotent(t *testing.T) {
	want := reference(t)
	_, ops := planFixture(t)
	for k := 0; k <= len(ops); k++ {
		t.Run(fmt.Sprintf("prefix %d", k), func(t *testing.T) {
			host, ops := planFixture(t)
			require.NoError(t, Apply(ops[:k], ApplyOptions{}))
			require.NoError(t, Apply(ops, ApplyOptions{}))
			assert.Equal(t, want, snapshot(t, host))
			require.NoError(t, Apply(ops, ApplyOptions{Durable: true}))
			assert.Equal(t, want, snapshot(t, host))
		})
	}
}

// applyHelperEnv names the plan file TestApplyHelper applies, when the
// kill test runs the test binary as a helper.
const applyHelperEnv = "TXEXEC_TXN_APPLY_HELPER"

// TestApplyHelper is not a test: run by TestApplyKilled in a child
// process, it applies a plan until a fault point kills it.
func TestApplyHelper(t *testing.T) {
	planFile := os.Getenv(applyHelperEnv)
	if planFile == "" {
		t.Skip("helper process for TestApplyKilled")
	}
	b, err := os.ReadFile(planFile)
	require.NoError(t, err)
	var ops []store.RedoOp
	require.NoError(t, json.Unmarshal(b, &ops))
	require.NoError(t, Apply(ops, ApplyOptions{Durable: true}))
}

// TestApplyKilled kills a write-through at every fault point it passes
// (before each op, and inside the ops of several steps), then applies the
// plan again as recovery would: the tree must be the one an uninterrupted
// application gives.
func TestApplyKilled(t *testing.T) {
	want := reference(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, point := range []string{FaultBeforeOp, FaultMidOp} {
		killed := 0
		for n := 1; ; n++ {
			host, ops := planFixture(t)
			plan, err := json.Marshal(ops)
			require.NoError(t, err)
			planFile := filepath.Join(t.TempDir(), "plan.json")
			require.NoError(t, os.WriteFile(planFile, plan, 0o600))

			cmd := exec.Command(exe, "-test.run=^TestApplyHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), applyHelperEnv+"="+planFile,
				fmt.Sprintf("%s=%s@%d", store.FaultEnv, point, n))
			out, err := cmd.CombinedOutput()
			if err == nil {
				break // fewer than n hits: the helper finished
			}
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL,
				"helper at %s@%d: %v\n%s", point, n, err, out)
			killed++

			require.NoError(t, Apply(ops, ApplyOptions{Durable: true}), "redo after %s@%d", point, n)
			assert.Equal(t, want, snapshot(t, host), "after a kill at %s@%d", point, n)
		}
		t.Logf("%s: killed at %d points", point, killed)
		assert.NotZero(t, killed, point)
	}
}

func TestApplyErrorNamesOp(t *testing.T) {
	d := t.TempDir()
	require.NoError(t, os.MkdirAll(d+"/dir/sub", 0o755))
	writeFile(t, d+"/f", "x")
	ops := []store.RedoOp{
		{Kind: store.OpUnlink, Path: d + "/f", Ino: inoOf(t, d+"/f")},
		{Kind: store.OpRmdir, Path: d + "/dir", Ino: inoOf(t, d+"/dir")},
	}
	err := Apply(ops, ApplyOptions{})
	require.ErrorIs(t, err, unix.ENOTEMPTY)
	var pe *os.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "rmdir", pe.Op)
	assert.Equal(t, d+"/dir", pe.Path)
	assert.True(t, strings.HasPrefix(err.Error(), "apply redo op 1 (rmdir): rmdir "), err.Error())
	assert.NoFileExists(t, d+"/f", "ops before the failing one are done")
}

// TestApplyAddFlags: OpAddFlags sets chattr +i / +a after the renames that
// placed the objects, keeps the other flags, is idempotent, and skips an
// object that is not the expected inode.
func TestApplyAddFlags(t *testing.T) {
	testenv.NeedRoot(t, "setting the immutable flag needs CAP_LINUX_IMMUTABLE")
	d := t.TempDir()
	staging := filepath.Join(d, "staging")
	require.NoError(t, os.Mkdir(staging, 0o755))
	writeFile(t, staging+"/1", "data")
	require.NoError(t, os.Mkdir(staging+"/2", 0o755))
	before := testenv.InodeFlags(t, staging+"/1")
	t.Cleanup(func() {
		testenv.ClearInodeFlags(d + "/f")
		testenv.ClearInodeFlags(d + "/dir")
	})
	ops := []store.RedoOp{
		{Kind: store.OpRename, Src: staging + "/1", Path: d + "/f", Ino: inoOf(t, staging+"/1")},
		{Kind: store.OpRename, Src: staging + "/2", Path: d + "/dir", Ino: inoOf(t, staging+"/2")},
		{Kind: store.OpAddFlags, Path: d + "/dir", Ino: inoOf(t, staging+"/2"), Mode: store.FlagAppend},
		{Kind: store.OpAddFlags, Path: d + "/f", Ino: inoOf(t, staging+"/1"), Mode: store.FlagImmutable},
		{Kind: store.OpAddFlags, Path: d + "/f", Ino: 1, Mode: store.FlagAppend}, // another inode: skipped
	}
	var skipped []int
	opt := ApplyOptions{Durable: true, Skipped: func(i int, _ store.RedoOp, _ string) { skipped = append(skipped, i) }}
	require.NoError(t, Apply(ops, opt))
	assert.Equal(t, before|store.FlagImmutable, testenv.InodeFlags(t, d+"/f"))
	assert.NotZero(t, testenv.InodeFlags(t, d+"/dir")&store.FlagAppend)
	assert.Equal(t, []int{4}, skipped)
	skipped = nil
	require.NoError(t, Apply(ops, opt), "redone")
	assert.Equal(t, before|store.FlagImmutable, testenv.InodeFlags(t, d+"/f"))
	assert.Equal(t, "data", readFile(t, d+"/f"))
}

// TestApplyLongPaths: paths of PATH_MAX bytes and more (a transaction
// reaches them through relative paths) are written through like others.
func TestApplyLongPaths(t *testing.T) {
	d := t.TempDir()
	staging := filepath.Join(d, "staging")
	require.NoError(t, os.Mkdir(staging, 0o755))
	// Make d/n/n/…/n deeper than PATH_MAX, one level at a time.
	name := strings.Repeat("n", 200)
	fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	deep := d
	for len(deep) < unix.PathMax+300 {
		require.NoError(t, unix.Mkdirat(fd, name, 0o755))
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		unix.Close(fd)
		fd, deep = next, deep+"/"+name
	}
	defer unix.Close(fd)
	// The inode of an object reached through fd.
	inoAt := func(name string) uint64 {
		var st unix.Stat_t
		require.NoError(t, unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW))
		return st.Ino
	}
	writeFile(t, staging+"/1", "deep data")
	require.NoError(t, os.Mkdir(staging+"/2", 0o700))
	fileIno, dirIno := inoOf(t, staging+"/1"), inoOf(t, staging+"/2")
	ops := []store.RedoOp{
		{Kind: store.OpRename, Src: staging + "/1", Path: deep + "/f", Ino: fileIno},
		{Kind: store.OpRename, Src: staging + "/2", Path: deep + "/sub", Ino: dirIno},
		{Kind: store.OpLink, Src: deep + "/f", Path: deep + "/sub/g", Ino: fileIno},
		{Kind: store.OpSetattr, Path: deep + "/f", Ino: fileIno, Attrs: store.AttrMode | store.AttrMtime, Mode: 0o640, Mtime: ts(1000)},
		{Kind: store.OpRename, Src: deep + "/sub/g", Path: deep + "/h", Ino: fileIno},
		{Kind: store.OpUnlink, Path: deep + "/h", Ino: fileIno},
		{Kind: store.OpFsyncDir, Path: deep},
	}
	require.NoError(t, Apply(ops, ApplyOptions{Durable: true}))
	require.NoError(t, Apply(ops, ApplyOptions{Durable: true}), "redone")
	assert.Equal(t, fileIno, inoAt("f"))
	assert.Equal(t, dirIno, inoAt("sub"))
	var st unix.Stat_t
	require.NoError(t, unix.Fstatat(fd, "f", &st, 0))
	assert.Equal(t, uint32(0o640), st.Mode&0o7777)
	assert.Equal(t, int64(1000), st.Mtim.Sec)
	assert.Equal(t, uint64(1), st.Nlink)
	assert.Error(t, unix.Fstatat(fd, "h", &st, 0), "unlinked")
	ffd, err := unix.Openat(fd, "f", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	b := make([]byte, 64)
	n, _ := unix.Read(ffd, b)
	unix.Close(ffd)
	assert.Equal(t, "deep data", string(b[:n]))
}
