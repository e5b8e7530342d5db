package vfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// resolveCached is RESOLVE_CACHED (linux/openat2.h), which x/sys/unix lacks.
const resolveCached = 0x20

// resolveFlags are the RESOLVE_* flags openat2 knows (VALID_RESOLVE_FLAGS).
const resolveFlags = unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT | resolveCached

// oTmpfileBit is __O_TMPFILE (O_TMPFILE without O_DIRECTORY).
const oTmpfileBit = unix.O_TMPFILE &^ unix.O_DIRECTORY

// checkResolve validates openat2's resolve field as build_open_flags does.
func checkResolve(how OpenHow) error {
	r := how.Resolve
	if r&^resolveFlags != 0 {
		return unix.EINVAL
	}
	if r&unix.RESOLVE_BENEATH != 0 && r&unix.RESOLVE_IN_ROOT != 0 {
		return unix.EINVAL
	}
	// RESOLVE_CACHED: "the lookup must be served from the dentry cache";
	// the view's walk never does I/O the caller could wait for, so only
	// the calls that could never be served that way fail.
	if r&resolveCached != 0 && how.Flags&(unix.O_TRUNC|unix.O_CREAT|oTmpfileBit) != 0 {
		return unix.EAGAIN
	}
	return nil
}

// CheckOpenHow checks open flags and openat2's resolve flags as
// build_open_flags does before any lookup (Open checks them too; openat2's
// decoder, to answer before it reads the path).
func CheckOpenHow(how OpenHow) error {
	if err := checkOpenFlags(how.Flags); err != nil {
		return err
	}
	return checkResolve(how)
}

// checkOpenFlags refuses, as build_open_flags does before any lookup,
// O_CREAT with O_DIRECTORY (Linux 6.4 and later: it used to create a
// regular file) and an O_TMPFILE without O_DIRECTORY or without write
// access. open(2) drops all flags but a few from an O_PATH open
// (build_open_how), so these never apply to one.
func checkOpenFlags(flags uint64) error {
	if flags&unix.O_PATH != 0 {
		return nil
	}
	if flags&(unix.O_CREAT|unix.O_DIRECTORY) == unix.O_CREAT|unix.O_DIRECTORY {
		return unix.EINVAL
	}
	if flags&oTmpfileBit != 0 && (flags&unix.O_DIRECTORY == 0 || flags&unix.O_ACCMODE == unix.O_RDONLY) {
		return unix.EINVAL
	}
	return nil
}

// Open implements View.
func (v *Tx) Open(c *Caller, at *Handle, path string, how OpenHow) (int, error) {
	if err := checkOpenFlags(how.Flags); err != nil {
		return -1, err
	}
	if err := checkResolve(how); err != nil {
		return -1, err
	}
	flags := how.Flags
	tmpfile := flags&oTmpfileBit != 0
	creating := flags&unix.O_CREAT != 0 && !tmpfile
	follow := flags&unix.O_NOFOLLOW == 0 && !(creating && flags&unix.O_EXCL != 0)
	v.mu.Lock()
	t, err := v.resolveHowLocked(c, at, path, followFinal.If(follow), how.Resolve)
	if err != nil {
		v.mu.Unlock()
		return -1, err
	}
	if t.pass {
		v.mu.Unlock()
		return v.openHost(c, t, how)
	}
	var o opened
	if tmpfile {
		o.fd, o.special = -1, -1
		o.fd, err = v.openTmpfileLocked(c, t, how)
	} else {
		o, err = v.openLocked(c, t, how)
	}
	v.mu.Unlock()
	if err != nil || o.special < 0 {
		return o.fd, err
	}
	// A FIFO or device is opened without v.mu: opening a FIFO waits for
	// its other end, which another process (of the transaction or not)
	// opens.
	defer unix.Close(o.special)
	if o.fifo {
		// Whether the other end is open decides this open: an end the
		// tree just closed must be closed for the kernel too.
		c.settle()
	}
	if !o.fifo || o.flags&unix.O_NONBLOCK != 0 || o.flags&unix.O_ACCMODE == unix.O_RDWR {
		fd, err := reopenSpecial(o.special, o.flags)
		if err == nil && !o.fifo && o.flags&unix.O_ACCMODE != unix.O_RDONLY {
			// A device node outside /dev (mknod'ed on the host).
			if err := v.hostWriteUnsupported(fd); err != nil {
				unix.Close(fd)
				return -1, err
			}
		}
		return fd, err
	}
	return openFifoFor(c, o.special, o.flags)
}

// openFifoFor opens a FIFO for c, waiting for its other end as open(2)
// does — but no longer than c lives: the caller waits for the answer in
// the kernel (only a fatal signal ends that wait), and a killed caller must
// not leave the supervisor blocked for ever in an open nobody will answer.
// When c's thread exits first, the supervisor opens the FIFO for reading
// and writing itself (which never blocks and is both ends), which ends the
// wait.
func openFifoFor(c *Caller, pathFd, flags int) (int, error) {
	pidfd, err := unix.PidfdOpen(c.Tid, unix.PIDFD_THREAD)
	if err == unix.ESRCH {
		return -1, unix.EINTR // the caller is already gone: nobody waits for this open
	}
	if err != nil {
		return -1, fmt.Errorf("open FIFO for %d: pidfd_open: %w", c.Tid, err)
	}
	defer unix.Close(pidfd)
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC); err != nil {
		return -1, err
	}
	defer unix.Close(wake[0])
	c.willWait()
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		fd, err := reopenSpecial(pathFd, flags)
		done <- result{fd, err}
		unix.Close(wake[1])
	}()
	fds := []unix.PollFd{{Fd: int32(wake[0]), Events: unix.POLLIN}, {Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || fds[0].Revents != 0 {
			break
		}
		if fds[1].Revents != 0 {
			// The caller is gone: end the wait, drop what it opened.
			if both, err := reopenSpecial(pathFd, unix.O_RDWR|unix.O_NONBLOCK); err == nil {
				r := <-done
				unix.Close(both)
				if r.err == nil {
					unix.Close(r.fd)
				}
				return -1, unix.EINTR
			}
			break
		}
	}
	r := <-done
	return r.fd, r.err
}

// openHost opens a path the view handed to the host. When the view's own
// walk led into a passthrough subtree, the host continues from an absolute
// path, so a RESOLVE_BENEATH or RESOLVE_IN_ROOT walk (which the view already
// kept inside its root) must not be scoped again; magic links stay refused,
// with EXDEV as nd_jump_link refuses them in a scoped walk.
func (v *Tx) openHost(c *Caller, t target, how OpenHow) (int, error) {
	scoped := how.Resolve&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) != 0
	if scoped && t.viaWalk {
		how.Resolve = how.Resolve&^(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) | unix.RESOLVE_NO_MAGICLINKS
	}
	fd, err := v.host.Open(c, t.hostAt, t.hostPath, how)
	if err == unix.ELOOP && scoped && t.viaWalk {
		err = unix.EXDEV
	}
	if err == nil && how.Flags&unix.O_ACCMODE != unix.O_RDONLY && how.Flags&unix.O_PATH == 0 {
		if pid, ok := outsideMem(c, fd); ok {
			unix.Close(fd)
			return -1, &Unsupported{What: "writing the memory of pid " + strconv.Itoa(pid) +
				", outside the transaction, through /proc/" + strconv.Itoa(pid) + "/mem"}
		}
		if err := v.hostWriteUnsupported(fd); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, err
}

// hostWriteUnsupported says whether fd, just opened for writing around
// the view (in a passthrough subtree, or on a device), writes what no
// transaction can roll back: a block device (below every file system:
// dd of=/dev/sdX), or the kernel's settings in /proc/sys and /sys —
// unless --exclude names the path, which says its writes bypass the
// transaction.
func (v *Tx) hostWriteUnsupported(fd int) error {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil
	}
	if v.isExcluded(p) {
		return nil
	}
	// --exclude takes directories: the message names p's.
	hint := " (--exclude " + filepath.Dir(p) + " would let it through)"
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFBLK:
		return &Unsupported{What: "writing to the block device " + p + hint}
	case st.Mode&unix.S_IFMT == unix.S_IFCHR && rawCharDevice(st.Rdev) != "":
		return &Unsupported{What: "writing to " + rawCharDevice(st.Rdev) + " " + p + hint}
	case under(p, "/proc/sys"), under(p, "/sys"):
		return &Unsupported{What: "writing the kernel setting " + p + hint}
	}
	return nil
}

// rawCharDevice names the kind of a character device that writes below
// every file system — physical memory and I/O ports (/dev/mem, /dev/kmem,
// /dev/port, model-specific registers, DAX memory), or disks through
// command pass-through (SCSI generic, bsg, NVMe's character devices, MTD
// and UBI flash) — or "" for any other
// (/dev/null, terminals, ...). The drivers of dynamic majors are looked up
// in /proc/devices.
func rawCharDevice(rdev uint64) string {
	major, minor := unix.Major(rdev), unix.Minor(rdev)
	if major == 1 { // the mem driver: /dev/null, zero, random... beside these
		switch minor {
		case 1, 2, 4:
			return "the memory device"
		}
		return ""
	}
	switch charDrivers()[major] {
	case "sg", "bsg", "nvme", "nvme-generic":
		return "the disk pass-through device"
	case "mtd", "ubi":
		return "the flash device"
	case "cpu/msr", "dax":
		return "the processor or memory device"
	}
	return ""
}

// charDrivers maps character-device majors to their drivers' names, from
// /proc/devices, read once: a driver loaded later keeps its major.
var charDrivers = sync.OnceValue(func() map[uint32]string {
	m := map[uint32]string{}
	b, err := os.ReadFile("/proc/devices")
	if err != nil {
		return m
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "Block devices:") {
			break
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseUint(f[0], 10, 32); err == nil {
			m[uint32(n)] = f[1]
		}
	}
	return m
})

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// isExcluded reports whether --exclude names p or a directory above it.
func (v *Tx) isExcluded(p string) bool {
	for _, x := range v.excludes {
		if under(p, x) || x == "/" {
			return true
		}
	}
	return false
}

// outsideMem reports whether fd, just opened for writing in /proc, is the
// memory of a process outside the transaction (the pid given): the
// write would reach around it, as process_vm_writev would. A process of
// the transaction is one txexec traces (its TracerPid is a thread of
// txexec), or the caller's own thread group.
func outsideMem(c *Caller, fd int) (int, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return 0, false
	}
	// The kernel names the file it opened: /proc/PID/mem or
	// /proc/PID/task/TID/mem.
	parts := strings.Split(strings.TrimPrefix(p, "/proc/"), "/")
	if !strings.HasPrefix(p, "/proc/") || parts[len(parts)-1] != "mem" || (len(parts) != 2 && !(len(parts) == 4 && parts[1] == "task")) {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid == c.Tgid {
		return 0, false
	}
	status, err := os.ReadFile("/proc/" + parts[0] + "/status")
	if err != nil {
		return pid, true
	}
	for _, l := range strings.Split(string(status), "\n") {
		if t, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			t = strings.TrimSpace(t)
			if _, err := os.Stat("/proc/self/task/" + t); t != "0" && err == nil {
				return 0, false
			}
		}
	}
	return pid, true
}

// opened is what openLocked gives back: a descriptor for the caller, or an
// O_PATH descriptor on a FIFO or device (special) to reopen with flags once
// v.mu is released.
type opened struct {
	fd, special int
	flags       int
	fifo        bool
}

func (v *Tx) openLocked(c *Caller, t target, how OpenHow) (opened, error) {
	o := opened{fd: -1, special: -1}
	fd, err := v.openNodeLocked(c, t, how, &o)
	o.fd = fd
	return o, err
}

// openNodeLocked opens the resolved target; for a FIFO or device it fills
// o.special instead.
func (v *Tx) openNodeLocked(c *Caller, t target, how OpenHow, o *opened) (int, error) {
	flags := how.Flags
	acc := flags & unix.O_ACCMODE
	n := t.node
	if n == nil {
		if flags&unix.O_CREAT == 0 || t.dir == nil {
			return -1, unix.ENOENT
		}
		if t.slash {
			return -1, unix.EISDIR
		}
		if err := v.mayCreateLocked(c, t.dir, t.name); err != nil {
			return -1, err
		}
		mode := unix.S_IFREG | how.Mode&0o7777
		// The caller's descriptor is the one that creates the file: a new
		// file is opened with the requested access even if its mode would
		// not allow it (open(2)).
		fd := -1
		_, err := v.createLocked(c, t.dir, t.name, mode, func(at int, sname string, perm uint32) error {
			var err error
			fd, err = unix.Openat(at, sname, int(flags&^unix.O_TRUNC)|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOCTTY, perm)
			return err
		})
		if err != nil {
			if fd >= 0 {
				unix.Close(fd)
			}
			return -1, err
		}
		return fd, nil
	}
	if flags&unix.O_CREAT != 0 && flags&unix.O_EXCL != 0 {
		return -1, unix.EEXIST
	}
	if n.typ == unix.S_IFLNK {
		// The final symlink was not followed (O_NOFOLLOW): only O_PATH
		// opens a symlink itself.
		// do_open asks for a directory before may_open refuses a
		// symlink.
		switch {
		case flags&unix.O_DIRECTORY != 0:
			return -1, unix.ENOTDIR
		case flags&unix.O_PATH == 0:
			return -1, unix.ELOOP
		}
		return v.pathTokenLocked(n)
	}
	if flags&unix.O_DIRECTORY != 0 && !n.isDir() {
		return -1, unix.ENOTDIR
	}
	if n.isDir() && (acc != unix.O_RDONLY || flags&(unix.O_CREAT|unix.O_TRUNC) != 0) && flags&unix.O_PATH == 0 {
		return -1, unix.EISDIR
	}
	a, err := v.attrsLocked(n)
	if err != nil {
		return -1, err
	}
	if flags&unix.O_PATH != 0 {
		return v.openPathLocked(c, t, n, a)
	}
	// Access mode 3 (no reading or writing, ioctls only) needs read and
	// write permission, as ACC_MODE says; it is staged like O_RDWR.
	var want uint32
	if acc == unix.O_RDONLY || acc == unix.O_RDWR || acc == unix.O_ACCMODE {
		want |= mayRead
	}
	if acc == unix.O_WRONLY || acc == unix.O_RDWR || acc == unix.O_ACCMODE || flags&unix.O_TRUNC != 0 {
		want |= mayWrite
	}
	if err := permission(c, a, want); err != nil {
		return -1, err
	}
	// may_open: O_NOATIME is the owner's (or CAP_FOWNER's), whatever the
	// object's type. The supervisor's own opens, which carry it too, would
	// not refuse it.
	if flags&unix.O_NOATIME != 0 && !isOwner(c, a) {
		return -1, unix.EPERM
	}
	if n.typ == unix.S_IFSOCK {
		return -1, unix.ENXIO
	}
	passFlags := int(flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW)) | unix.O_CLOEXEC | unix.O_NOCTTY
	writes := want&mayWrite != 0
	if n.typ != unix.S_IFREG {
		// FIFOs and devices hold no persistent data: the object itself.
		if n.isDir() {
			v.recordReadLocked(n, &unix.Stat_t{Mode: a.mode, Uid: a.uid, Gid: a.gid}, readMeta)
			return v.openBackingLocked(n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOATIME)
		}
		sp, err := v.openSpecialLocked(n)
		if err != nil {
			return -1, err
		}
		// may_open ignores O_TRUNC here: only the access mode opens a
		// FIFO for writing.
		if (acc == unix.O_WRONLY || acc == unix.O_RDWR) && n.typ == unix.S_IFIFO && n.host != (FileID{}) {
			// Writes through the read-only mount leave the host FIFO's
			// times alone; the view shows, and commit applies, the time
			// of the last open for writing (docs/semantics.md).
			v.touchDirLocked(n)
		}
		o.special, o.flags, o.fifo = sp, passFlags, n.typ == unix.S_IFIFO
		return -1, nil
	}
	if writes && n.staged == "" && v.outputs[n.host] {
		return v.openOutputLocked(n, passFlags)
	}
	if writes {
		if err := v.roCheckLocked(n); err != nil {
			return -1, err
		}
		if err := v.appendOnlyLocked(n, flags&unix.O_APPEND != 0 && flags&unix.O_TRUNC == 0, "open for appending"); err != nil {
			return -1, err
		}
		if err := v.textBusyLocked(n, a); err != nil {
			return -1, err
		}
		path, err := v.pathOfLocked(t)
		if err != nil {
			return -1, err
		}
		if err := v.copyUpLocked(n, path); err != nil {
			return -1, err
		}
		n.dataChanged = true
		if n.locDir == nil {
			n.locDir, n.locName = t.dir, t.name
		}
		return unix.Openat(n.area.fd, n.staged, passFlags, 0)
	}
	if n.staged != "" {
		return unix.Openat(n.area.fd, n.staged, passFlags, 0)
	}
	var st unix.Stat_t
	fd, statted, err := v.openBackingStatLocked(n, passFlags&^unix.O_NOCTTY|unix.O_NOATIME, &st)
	if err != nil {
		return -1, err
	}
	if statted || unix.Fstat(fd, &st) == nil {
		v.recordReadLocked(n, &st, readData)
	}
	if n.locDir == nil {
		n.locDir, n.locName = t.dir, t.name
	}
	return fd, nil
}

// openOutputLocked opens one of the command's output files (SetOutputs)
// for writing, on the host: its inherited descriptors write there, so a
// staged copy would lose their writes at commit (`txexec -- sh -c 'echo a;
// echo b >> log' > log` appends both, as natively). The caller's
// permission has been checked.
//
// Preconditions: v.mu held.
func (v *Tx) openOutputLocked(n *Node, flags int) (int, error) {
	fd, err := unix.Open(n.hostPath, flags|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || !n.isHostObject(&st) {
		unix.Close(fd)
		return -1, v.hostChanged(n.hostPath, unix.ESTALE)
	}
	return fd, nil
}

// openPathLocked serves O_PATH. The kernel's SECCOMP_IOCTL_NOTIF_ADDFD takes
// its descriptor with fget(), which refuses O_PATH files, so an O_PATH
// descriptor cannot be installed in the caller. A caller who may read a
// file or directory gets a read-only descriptor on its backing object,
// which does everything an O_PATH one does (fstat, *at dirfd, fchdir,
// /proc/self/fd/N) and more; for anything else — symlinks, FIFOs, devices,
// sockets, objects the caller may not read — it gets a token (see
// pathTokenLocked).
//
// What the caller does with it then cannot be told from a read (fstat of a
// read-only descriptor reads the data, statGranules), so the open itself
// counts as a read of the attributes, which is what O_PATH is for.
func (v *Tx) openPathLocked(c *Caller, t target, n *Node, a attrs) (int, error) {
	if err := v.readAttrsLocked(n); err != nil {
		return -1, err
	}
	if (n.typ == unix.S_IFDIR || n.typ == unix.S_IFREG) && permission(c, a, mayRead) == nil {
		if n.isDir() {
			return v.openBackingLocked(n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOATIME)
		}
		return v.openBackingLocked(n, unix.O_RDONLY|unix.O_NOATIME)
	}
	return v.pathTokenLocked(n)
}

// pathTokenLocked returns a descriptor that stands for n where an O_PATH
// one would: a read-only descriptor on an empty file of the staging area
// that the view knows as n (HandleOf, /proc/self/fd/N). Every call the view
// serves — fstatat(fd, "", AT_EMPTY_PATH), readlinkat(fd, ""), fchownat,
// linkat(AT_EMPTY_PATH), *at relative to it, opening /proc/self/fd/N —
// then acts on n, as glibc's fchmodat(AT_SYMLINK_NOFOLLOW) and tar -p rely
// on. Calls the kernel runs itself see the empty file (docs/semantics.md).
//
// Preconditions: v.mu held.
func (v *Tx) pathTokenLocked(n *Node) (int, error) {
	if n.token == "" {
		name := "pathfd-" + v.newStagedNameLocked()
		fd, err := unix.Openat(v.home.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		n.token = name
		v.nodes[idOf(&st)] = n
		v.fastOwnObjectLocked(idOf(&st))
	}
	return unix.Openat(v.home.fd, n.token, unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// openSpecialLocked returns an O_PATH descriptor on a FIFO or device node
// itself, for reopenSpecial. A host FIFO or device keeps its identity in
// the view (a staged copy only holds attribute changes): processes in and
// outside the transaction meet on it. It is reached through a read-only
// clone of the mount tree, on which the kernel neither updates its times on
// I/O (file_update_time needs mount write access) nor its atime.
//
// Preconditions: v.mu held.
func (v *Tx) openSpecialLocked(n *Node) (int, error) {
	const flags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if n.host == (FileID{}) {
		if n.staged == "" {
			return -1, unix.ESTALE
		}
		return unix.Openat(n.area.fd, n.staged, flags, 0)
	}
	root, err := v.roRootLocked()
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	return v.openHostObject(n, root, "."+n.hostPath, flags, &st)
}

// reopenSpecial opens the FIFO or device an O_PATH descriptor refers to,
// through its /proc magic link (which opens the object anew). It may block:
// opening a FIFO waits for the other end.
func reopenSpecial(pathFd, flags int) (int, error) {
	p := "/proc/self/fd/" + strconv.Itoa(pathFd)
	for {
		fd, err := unix.Open(p, flags&^unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openTmpfileLocked serves O_TMPFILE: an unnamed staged file, which linkat
// can later give a name in the view.
func (v *Tx) openTmpfileLocked(c *Caller, t target, how OpenHow) (int, error) {
	dir := t.node
	if dir == nil {
		return -1, unix.ENOENT
	}
	if !dir.isDir() {
		return -1, unix.ENOTDIR
	}
	da, err := v.attrsLocked(dir)
	if err != nil {
		return -1, err
	}
	// do_tmpfile: the mount is writable (mnt_want_write) before the
	// directory's permission is checked.
	if err := v.roCheckLocked(dir); err != nil {
		return -1, err
	}
	if err := permission(c, da, mayWrite|mayExec); err != nil {
		return -1, err
	}
	a, err := v.areaForLocked(dir, dir.viewPathLocked())
	if err != nil {
		return -1, err
	}
	uid, gid, mode := newOwner(c, da, unix.S_IFREG|how.Mode&0o7777)
	fd, err := unix.Openat(a.fd, ".", int(how.Flags&^unix.O_CREAT)|unix.O_CLOEXEC, mode&0o7777)
	if err != nil {
		return -1, err
	}
	if err := unix.Fchown(fd, int(uid), int(gid)); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Fchmod(fd, mode&0o7777); err != nil {
		unix.Close(fd)
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	afd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	n := &Node{typ: unix.S_IFREG, hostFd: -1, anon: true, anonFd: afd, tmpDir: dir, stagedID: idOf(&st), area: a, replayIno: st.Ino}
	v.nodes[n.stagedID] = n
	v.fastOwnObjectLocked(n.stagedID)
	return fd, nil
}

// openHostOriginal opens a host object read-only. O_NOATIME needs
// ownership or CAP_FOWNER, which an unprivileged supervisor lacks for
// others' files: without it the read sets atime as the caller's own read
// would (docs/semantics.md).
func openHostOriginal(dirfd int, name string, flags int) (int, error) {
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err == unix.EPERM && flags&unix.O_NOATIME != 0 {
		fd, err = unix.Openat(dirfd, name, flags&^unix.O_NOATIME, 0)
	}
	return fd, err
}

// openHostObject opens host original n as name in dirfd (read-only) and
// checks it is still the object the view found: any failure means the host
// changed it since (ELOOP: a symlink now stands there), which dooms the
// transaction.
// Its attributes, read for that check, are left in *st.
func (v *Tx) openHostObject(n *Node, dirfd int, name string, flags int, st *unix.Stat_t) (int, error) {
	fd, err := openHostOriginal(dirfd, name, flags)
	if err != nil {
		return -1, v.hostChanged(n.hostPath, err)
	}
	if unix.Fstat(fd, st) != nil || !n.isHostObject(st) {
		unix.Close(fd)
		return -1, v.hostChanged(n.hostPath, unix.ESTALE)
	}
	return fd, nil
}

// openBackingLocked opens n's backing object (never writable for a host
// original).
func (v *Tx) openBackingLocked(n *Node, flags int) (int, error) {
	var st unix.Stat_t
	fd, _, err := v.openBackingStatLocked(n, flags, &st)
	return fd, err
}

// openBackingStatLocked is openBackingLocked that also reports whether it
// read the opened object's attributes, into *st: it does for a host
// original that is not a directory, whose identity it checks.
func (v *Tx) openBackingStatLocked(n *Node, flags int, st *unix.Stat_t) (int, bool, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NOFOLLOW
	var fd int
	var err error
	switch {
	case n.anon:
		fd, err = reopenSpecial(n.anonFd, flags&^unix.O_NOFOLLOW)
	case n.hostFd >= 0:
		// A host directory, even one with a staged copy of its
		// attributes: its entries are the host's (docs/architecture.md §1: names are
		// virtual; getdents of it is merged when the view changed them).
		fd, err = openHostOriginal(n.hostFd, ".", flags&^unix.O_NOFOLLOW)
	case n.staged != "":
		fd, err = unix.Openat(n.area.fd, n.staged, flags, 0)
	case n.hostParent != nil:
		if flags&unix.O_ACCMODE != unix.O_RDONLY {
			panic("vfs: host original opened writable")
		}
		fd, err = v.openHostObject(n, n.hostParent.hostFd, n.hostName, flags, st)
		if err != nil {
			return -1, false, err
		}
		return fd, true, nil
	default:
		return -1, false, unix.ESTALE
	}
	if err != nil {
		return -1, false, err
	}
	return fd, false, nil
}
