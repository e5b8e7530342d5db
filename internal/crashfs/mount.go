package crashfs

import (
	"fmt"
	"os"
	"slices"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Mount is a crashfs file system mounted on Dir. Its methods are safe to
// call while programs use the mount.
type Mount struct {
	Dir    string
	fs     *fs
	server *fuse.Server
}

// Available says why FUSE cannot be mounted here, or "" when it can.
func Available() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Sprintf("no FUSE device: %v", err)
	}
	if os.Geteuid() != 0 {
		return "mounting a FUSE file system without fusermount needs root"
	}
	return ""
}

// New mounts an empty crashfs on dir, an existing empty directory. The
// root is mode 0755, owned by root, and durable.
func New(dir string) (*Mount, error) {
	mountFusectl()
	m := &Mount{Dir: dir}
	return m, m.serve(newTree())
}

// serve mounts a file system serving t on m.Dir.
func (m *Mount) serve(t *tree) error {
	f := newFS(t)
	srv, err := fuse.NewServer(f, m.Dir, &fuse.MountOptions{
		FsName:            "crashfs",
		Name:              "crashfs",
		DirectMountStrict: true, // no fusermount: root mounts it itself
		AllowOther:        true, // txexec serves other users' processes
		// The kernel checks permissions against the modes and owners
		// served, as for any local file system.
		Options:            []string{"default_permissions"},
		DisableReadDirPlus: true,
		MaxBackground:      64,
	})
	if err != nil {
		return fmt.Errorf("crashfs: mount on %s: %w", m.Dir, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		return fmt.Errorf("crashfs: mount on %s: %w", m.Dir, err)
	}
	m.fs, m.server = f, srv
	return nil
}

// fusectlDir is where the kernel's FUSE control file system shows each
// connection; writing to its abort file ends a connection whose server
// is gone or stuck.
const fusectlDir = "/sys/fs/fuse/connections"

// mountFusectl mounts the FUSE control file system where it is not, so
// that a detached mount's connection can be aborted (best effort).
func mountFusectl() {
	var sfs unix.Statfs_t
	const fusectlMagic = 0x65735543
	if err := unix.Statfs(fusectlDir, &sfs); err != nil || sfs.Type == fusectlMagic {
		return
	}
	unix.Mount("fusectl", fusectlDir, "fusectl", 0, "")
}

// Sync makes everything durable, as a machine idle for long has it: for
// the fixture of a test, before what it tests begins.
func (m *Mount) Sync() {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	m.fs.tree.syncAll()
}

// PowerCut loses everything not durable: it freezes the file system
// (every request in flight or to come fails with EIO), detaches the
// mount, and mounts the durable state in its place. Processes that still
// use the old mount keep failing; the caller kills them first.
func (m *Mount) PowerCut() error {
	f := m.fs
	f.mu.Lock()
	f.frozen = true
	durable := f.tree.durable()
	f.mu.Unlock()
	if err := m.detach(); err != nil {
		return err
	}
	return m.serve(durable)
}

// detach unmounts lazily (a killed program may not have closed its files
// yet) and aborts the old connection, so that its server stops.
func (m *Mount) detach() error {
	var st unix.Stat_t
	statErr := unix.Stat(m.Dir, &st)
	if err := unix.Unmount(m.Dir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("crashfs: unmount %s: %w", m.Dir, err)
	}
	if statErr == nil {
		// Best effort: fusectl may not be mounted; the server then ends
		// when the last file of the old mount is closed.
		os.WriteFile(fmt.Sprintf("%s/%d/abort", fusectlDir, unix.Minor(st.Dev)), []byte("1"), 0)
	}
	return nil
}

// Close unmounts the file system.
func (m *Mount) Close() error {
	m.fs.mu.Lock()
	m.fs.frozen = true
	m.fs.mu.Unlock()
	return m.detach()
}

// CutAtBoundary arms a power cut: the first k boundary operations from
// now are performed, and at the next one the file system freezes and
// onCut runs (it kills the program under test, which must not go on past
// the cut). It also restarts the count that Boundaries reports. k < 0
// only restarts the count.
func (m *Mount) CutAtBoundary(k int, onCut func()) {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	m.fs.boundaries, m.fs.cutAt, m.fs.onCut, m.fs.cut = nil, k, onCut, false
}

// Boundaries lists the boundary operations performed since the last
// CutAtBoundary, by kind ("fsync", "fdatasync", "fsyncdir", "rename",
// "link", "unlink", "rmdir", "setattr", "setxattr", "removexattr"), and
// says whether its cut came.
func (m *Mount) Boundaries() (ops []string, cut bool) {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	return slices.Clone(m.fs.boundaries), m.fs.cut
}

// FsyncFault selects the fsyncs (of files or directories, fdatasync too)
// that fail with EIO.
type FsyncFault struct {
	// Nth, when positive, fails the Nth fsync from now.
	Nth int
	// Path, when set, fails every fsync of an object one of whose names
	// matches it (path.Match, relative to the mount's root).
	Path string
}

// FailFsync arms f (the zero FsyncFault disarms) and restarts the count
// of fsyncs that Fsyncs reports.
func (m *Mount) FailFsync(f FsyncFault) {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	m.fs.fsyncs, m.fs.failNth, m.fs.failPath, m.fs.failed = 0, f.Nth, f.Path, 0
}

// Fsyncs is how many fsyncs were asked since the last FailFsync, and how
// many of them failed.
func (m *Mount) Fsyncs() (n, failed int) {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	return m.fs.fsyncs, m.fs.failed
}
