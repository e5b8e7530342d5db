package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/proc"
)

// allCaps is a full capability set.
const allCaps = ^uint64(0)

// credCaller is a caller with the given credentials and no file-system
// context: enough for the pure permission functions.
func credCaller(cr proc.Cred) *Caller { return &Caller{Cred: &cr} }

func TestAccessCred(t *testing.T) {
	tests := []struct {
		name         string
		in           proc.Cred
		fsuid, fsgid uint32
		caps         uint64
	}{
		{"real root, effective user: the permitted set", proc.Cred{UID: 0, EUID: 1000, FSUID: 1000, GID: 0, FSGID: 1000, CapPrm: allCaps}, 0, 0, allCaps},
		{"real user, effective root: no capabilities", proc.Cred{UID: 1000, EUID: 0, FSUID: 0, GID: 1000, FSGID: 0, CapEff: allCaps, CapPrm: allCaps}, 1000, 1000, 0},
		{"root with a reduced permitted set", proc.Cred{CapEff: allCaps, CapPrm: 1 << unix.CAP_DAC_READ_SEARCH}, 0, 0, 1 << unix.CAP_DAC_READ_SEARCH},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := accessCred(&tt.in)
			assert.Equal(t, tt.fsuid, got.FSUID)
			assert.Equal(t, tt.fsgid, got.FSGID)
			assert.Equal(t, tt.caps, got.CapEff)
		})
	}
}

func TestMayChangeTimes(t *testing.T) {
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
	set := unix.Timespec{Sec: 5}
	user := credCaller(proc.Cred{UID: 1000, FSUID: 1000, GID: 1000, FSGID: 1000})
	writable := attrs{mode: unix.S_IFREG | 0o666}
	readOnly := attrs{mode: unix.S_IFREG | 0o644}
	owned := attrs{mode: unix.S_IFREG | 0o444, uid: 1000}
	tests := []struct {
		name string
		ts   *[2]unix.Timespec
		a    attrs
		c    *Caller
		want error
	}{
		{"NULL, writable", nil, writable, user, nil},
		{"NULL, not writable", nil, readOnly, user, unix.EACCES},
		{"both now, writable", &[2]unix.Timespec{now, now}, writable, user, nil},
		{"both now, not writable", &[2]unix.Timespec{now, now}, readOnly, user, unix.EACCES},
		{"now and omit (touch -a) needs ownership", &[2]unix.Timespec{now, omit}, writable, user, unix.EPERM},
		{"omit and now (touch -m) needs ownership", &[2]unix.Timespec{omit, now}, writable, user, unix.EPERM},
		{"now and omit, not writable", &[2]unix.Timespec{now, omit}, readOnly, user, unix.EPERM},
		{"explicit times need ownership", &[2]unix.Timespec{set, set}, writable, user, unix.EPERM},
		{"owner sets any times", &[2]unix.Timespec{set, omit}, owned, user, nil},
		{"CAP_FOWNER sets any times", &[2]unix.Timespec{set, set}, readOnly, credCaller(proc.Cred{FSUID: 7, CapEff: 1 << unix.CAP_FOWNER}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mayChangeTimes(tt.c, tt.a, timesTouch(tt.ts))
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
}

func TestNewOwner(t *testing.T) {
	other := &Caller{Cred: &proc.Cred{FSUID: 1000, FSGID: 1000}}
	member := &Caller{Cred: &proc.Cred{FSUID: 1000, FSGID: 1000, Groups: []uint32{1234}}}
	root := &Caller{Cred: &proc.Cred{CapEff: allCaps}}
	withUmask := func(c *Caller, umask uint32) *Caller { cc := *c; cc.Umask = umask; return &cc }
	sgidDir := attrs{mode: unix.S_IFDIR | unix.S_ISGID | 0o777, gid: 1234}
	plainDir := attrs{mode: unix.S_IFDIR | 0o777, gid: 1234}
	tests := []struct {
		name     string
		c        *Caller
		dir      attrs
		mode     uint32
		wantGID  uint32
		wantMode uint32
	}{
		{"set-group-ID without group execute stays", other, sgidDir, unix.S_IFREG | 0o2764, 1234, unix.S_IFREG | 0o2764},
		{"set-group-ID with group execute goes", other, sgidDir, unix.S_IFREG | 0o2774, 1234, unix.S_IFREG | 0o774},
		{"group execute is judged before the umask", withUmask(other, 0o010), sgidDir, unix.S_IFREG | 0o2774, 1234, unix.S_IFREG | 0o764},
		{"a member keeps it", member, sgidDir, unix.S_IFREG | 0o2774, 1234, unix.S_IFREG | 0o2774},
		{"CAP_FSETID keeps it", root, sgidDir, unix.S_IFREG | 0o2774, 1234, unix.S_IFREG | 0o2774},
		{"a FIFO too", other, sgidDir, unix.S_IFIFO | 0o2674, 1234, unix.S_IFIFO | 0o674},
		{"set-user-ID stays", withUmask(other, 0o022), sgidDir, unix.S_IFREG | 0o6775, 1234, unix.S_IFREG | 0o4755},
		{"a directory inherits the bit", withUmask(other, 0o022), sgidDir, unix.S_IFDIR | 0o777, 1234, unix.S_IFDIR | 0o2755},
		{"a plain directory gives the fsgid", other, plainDir, unix.S_IFREG | 0o2774, 1000, unix.S_IFREG | 0o2774},
		{"symlinks ignore the umask", withUmask(other, 0o022), plainDir, unix.S_IFLNK | 0o777, 1000, unix.S_IFLNK | 0o777},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid, gid, mode := newOwner(tt.c, tt.dir, tt.mode)
			assert.Equal(t, tt.c.Cred.FSUID, uid)
			assert.Equal(t, tt.wantGID, gid)
			assert.Equal(t, tt.wantMode, mode, "mode %o, want %o", mode, tt.wantMode)
		})
	}
}

func TestMayDeleteOrder(t *testing.T) {
	user := credCaller(proc.Cred{UID: 1000, FSUID: 1000, GID: 1000, FSGID: 1000})
	file := attrs{mode: unix.S_IFREG | 0o644}
	dir := attrs{mode: unix.S_IFDIR | 0o755}
	roDir := attrs{mode: unix.S_IFDIR | 0o555}
	openDir := attrs{mode: unix.S_IFDIR | 0o777}
	sticky := attrs{mode: unix.S_IFDIR | unix.S_ISVTX | 0o777}
	tests := []struct {
		name                  string
		dir, victim           attrs
		dirFlags, victimFlags uint64
		isDir                 bool
		want                  error
	}{
		{"unwritable: rmdir of a file", roDir, file, 0, 0, true, unix.EACCES},
		{"unwritable: unlink of a directory", roDir, dir, 0, 0, false, unix.EACCES},
		{"writable: rmdir of a file", openDir, file, 0, 0, true, unix.ENOTDIR},
		{"writable: unlink of a directory", openDir, dir, 0, 0, false, unix.EISDIR},
		{"sticky before the type", sticky, dir, 0, 0, false, unix.EPERM},
		{"append-only directory before the type", openDir, dir, unix.STATX_ATTR_APPEND, 0, false, unix.EPERM},
		{"immutable victim before the type", openDir, file, 0, unix.STATX_ATTR_IMMUTABLE, true, unix.EPERM},
		{"writable: unlink of a file", openDir, file, 0, 0, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mayDelete(user, tt.dir, tt.victim, tt.dirFlags, tt.victimFlags, tt.isDir)
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
}

func TestCheckOpenFlags(t *testing.T) {
	tests := []struct {
		name  string
		flags uint64
		want  error
	}{
		{"O_CREAT|O_DIRECTORY", unix.O_CREAT | unix.O_DIRECTORY, unix.EINVAL},
		{"O_TMPFILE|O_CREAT", unix.O_TMPFILE | unix.O_CREAT | unix.O_WRONLY, unix.EINVAL},
		{"__O_TMPFILE without O_DIRECTORY", oTmpfileBit | unix.O_WRONLY, unix.EINVAL},
		{"O_TMPFILE read-only", unix.O_TMPFILE | unix.O_RDONLY, unix.EINVAL},
		{"O_TMPFILE read-only with O_TRUNC", unix.O_TMPFILE | unix.O_RDONLY | unix.O_TRUNC, unix.EINVAL},
		{"O_TMPFILE with access mode 3", unix.O_TMPFILE | unix.O_ACCMODE, nil},
		{"O_TMPFILE", unix.O_TMPFILE | unix.O_RDWR, nil},
		{"O_PATH drops O_CREAT", unix.O_PATH | unix.O_CREAT | unix.O_DIRECTORY, nil},
		{"O_CREAT", unix.O_CREAT | unix.O_WRONLY, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOpenFlags(tt.flags)
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
}

// TestPermissionOrderInView runs the checks through the view, for an
// unprivileged caller and for one whose real uid is root.
func TestPermissionOrderInView(t *testing.T) {
	e := newEnv(t, func(dir string) {
		for _, d := range []string{"ro", "ro/sub"} {
			require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ro/file"), []byte("f"), 0o644))
		require.NoError(t, os.Chmod(filepath.Join(dir, "ro"), 0o555))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "w666"), []byte("w"), 0o644))
		require.NoError(t, os.Chmod(filepath.Join(dir, "w666"), 0o666))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "r444"), []byte("r"), 0o444))
	})
	user := e.as(1000, 1000)
	realRoot := e.as(1000, 1000)
	realRoot.Cred.UID, realRoot.Cred.GID, realRoot.Cred.CapPrm = 0, 0, allCaps
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"rmdir of a file in an unwritable directory", func() error {
			return e.v.Unlink(user, e.c.Cwd, "ro/file", unix.AT_REMOVEDIR)
		}, unix.EACCES},
		{"unlink of a directory in an unwritable directory", func() error {
			return e.v.Unlink(user, e.c.Cwd, "ro/sub", 0)
		}, unix.EACCES},
		{"unlink of a directory with a trailing slash", func() error {
			return e.v.Unlink(user, e.c.Cwd, "ro/sub/", 0)
		}, unix.EISDIR},
		{"rename of a file over a directory in an unwritable directory", func() error {
			return e.v.Rename(user, e.c.Cwd, "ro/file", e.c.Cwd, "ro/sub", 0)
		}, unix.EACCES},
		{"rename of a file over a directory", func() error {
			return e.v.Rename(e.c, e.c.Cwd, "ro/file", e.c.Cwd, "ro/sub", 0)
		}, unix.EISDIR},
		{"touch -a by a writable non-owner", func() error {
			return e.v.Utimens(user, e.c.Cwd, "w666", &[2]unix.Timespec{now, omit}, 0)
		}, unix.EPERM},
		{"touch by a writable non-owner", func() error {
			return e.v.Utimens(user, e.c.Cwd, "w666", nil, 0)
		}, nil},
		{"access by a real root with another effective uid", func() error {
			return e.v.Access(realRoot, e.c.Cwd, "r444", unix.W_OK, 0)
		}, nil},
		{"the same with AT_EACCESS", func() error {
			return e.v.Access(realRoot, e.c.Cwd, "r444", unix.W_OK, unix.AT_EACCESS)
		}, unix.EACCES},
		{"open O_CREAT|O_DIRECTORY", func() error {
			fd, err := e.v.Open(e.c, e.c.Cwd, "newfile", OpenHow{Flags: unix.O_CREAT | unix.O_DIRECTORY, Mode: 0o644})
			if err == nil {
				unix.Close(fd)
			}
			return err
		}, unix.EINVAL},
		{"readlink of a file descriptor's empty path", func() error {
			fd, err := e.v.Open(e.c, e.c.Cwd, "w666", OpenHow{Flags: unix.O_RDONLY})
			require.NoError(t, err)
			defer unix.Close(fd)
			h, err := e.v.HandleOf(e.c, fd)
			require.NoError(t, err)
			defer h.Release()
			_, err = e.v.Readlink(e.c, h, "")
			return err
		}, unix.ENOENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
	_, err := e.v.Stat(e.c, e.c.Cwd, "newfile", 0)
	assert.ErrorIs(t, err, unix.ENOENT, "open(O_CREAT|O_DIRECTORY) created the file")
}
