package vfs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"txexec/fastlookup"
	"txexec/internal/sysx"
	"txexec/store"
)

// DefaultPassthrough are the host subtrees that are passed through rather
// than made transactional (docs/architecture.md §30): reads are live, writes are not
// transactional.
var DefaultPassthrough = []string{"/proc", "/sys", "/dev"}

// Tx is a transaction's private view of the file system.
//
// Lock order: Tx.mu is the only lock; it is held for every operation, so
// operations of the transaction's processes are serialized with each other
// (never with other transactions or the host).
type Tx struct {
	host *Host
	// excludes are the --exclude paths (also in passthrough): writes
	// under them bypass the transaction by the user's word, even where
	// the transaction would otherwise refuse them (hostWriteUnsupported).
	excludes []string
	// home is the staging area in the state directory (store.StagingDir):
	// for the paths on its mount, and for objects that shadow no path
	// (O_PATH stand-ins, probes). Other mounts get their own (see area).
	home *area
	// newArea makes the staging area of another mount (TxOptions.NewArea).
	newArea func(mountPoint string) (string, error)
	// noatime: host objects are reached through a private noatime clone
	// of the mount tree (openRoot).
	noatime bool
	// roRootFd is a read-only noatime clone, for host FIFOs and devices
	// (-1 until needed; guarded by mu).
	roRootFd int
	// passthrough are host paths whose subtrees are not transactional.
	passthrough []string
	// outputs are the files the command's inherited descriptors write to
	// (see SetOutputs).
	outputs map[FileID]bool
	// hostMade are the host entries the transaction made at once (bound
	// sockets, txsocket.go), removed again unless it commits;
	// madeAfterListing are those of them made in a host directory after
	// the transaction listed it, by directory path.
	hostMade         []hostMade
	madeAfterListing map[string]map[string]bool
	// Now, when set, is the clock the view stamps its own changes with
	// (directory times, ctimes: see nowLocked): deterministic runs set
	// their virtual clock, tests one of their own. Unset, the view
	// stamps with clock, the kernel's.
	Now func() time.Time
	// clock reads the time the kernel stamps files with (see nowLocked).
	clock *sysx.FileClock
	// SortedListings lists host directories by name instead of in the
	// host's order (deterministic runs; see Listing).
	SortedListings bool
	// StampTimes gives staged objects the times of Now instead of the
	// host kernel's (deterministic runs; see stampLocked).
	StampTimes bool
	// VirtualInodes numbers the view's objects in the order it first
	// shows them, instead of showing the host's inode numbers
	// (deterministic runs; see inoLocked).
	VirtualInodes bool

	mu sync.Mutex
	// Everything below is guarded by mu.
	root *Node
	// nodes maps host originals and staged objects to their node.
	nodes map[FileID]*Node
	// vinos are the virtual inode numbers given so far (VirtualInodes),
	// by host original; vinoN counts them.
	vinos   map[FileID]uint64
	vinoN   uint64
	journal []store.RedoOp
	reads   map[string]readRecord
	// gen counts the changes that can alter a listing of the view: an
	// entry set or removed, an object staged (its inode number in the
	// listing changes), an operation journaled. The feed's cache of
	// directories (feedwalk.go) holds while it does not move.
	gen uint64
	// feedDirs are the directories the parent paths of the agent's
	// records led to, for the feed's next records there, as found at
	// gen == feedDirsGen (feedWalkLocked).
	feedDirs    map[string]*Node
	feedDirsGen uint64
	// listed caches the last directory's whole view listing, in cookie
	// order, as Listing built it at gen == listedGen: a reader takes it a
	// buffer at a time (tens of getdents calls for a large directory), and
	// rebuilding, merging and sorting it for each call cost more than the
	// calls themselves. One directory only: readers list one to its end,
	// and a listing of every large directory kept would double the memory
	// its host entries already take.
	listedDir *Node
	listed    []Dirent
	listedGen uint64
	seq       int
	// areas are the staging areas by the view's mount id (mountOfLocked),
	// home's included; areaErrs says why one could not be made.
	areas    map[uint64]*area
	areaErrs map[uint64]error

	// dirShadows follow the directories whose entries changed, for their
	// size (dirsize.go).
	dirShadows map[*Node]*dirShadow

	// copies are the host originals that a copy-up journaled as replaced
	// by (OpRename) or written back from (OpCopyData) a staged copy, by
	// the staged path (the op's Src): their write-through changes the
	// object's data or attributes, not the entry (WriteSet).
	copies map[string]*Node

	// fast is the tree's fast-lookup memory (nil: no fast path): changes
	// are published into it before the view makes them, walked host
	// directories are offered to the agent, and the agent's records are
	// fed from rings into the read set (fastlookup.go).
	fast *fastlookup.Tree

	// doomed is set when the transaction can no longer commit (the host
	// changed under it, or an internal error); it aborts with this reason.
	doomed error
	// graves are the nodes' graves (Node.grave), which move with the
	// journal ops they index.
	graves []*grave
}

// readRecord is what the transaction observed of one host path, for
// validation at commit.
type readRecord struct {
	exists bool
	id     FileID
	typ    uint32
	// data and meta are the granules of the object (docs/semantics.md §3) the
	// transaction read, besides its name: data its contents, meta its
	// attributes (stat, getxattr, access). The attributes below are those
	// of the first such read: mode, uid, gid, and for a non-directory
	// size, mtime and ctime.
	data, meta      bool
	mode, uid, gid  uint32
	size            int64
	mtime, ctime    unix.Timespec
	listing         bool
	listingChecksum uint64
}

// TxOptions configure a view.
type TxOptions struct {
	// Excludes are --exclude paths, passed through like
	// DefaultPassthrough.
	Excludes []string
	// NewArea makes the staging area for the paths on the mount whose
	// root is mountPoint, as a new, empty directory in mountPoint that the
	// transaction owns and the store knows before it exists
	// (store.AddStagingArea), and returns its absolute path. It is called
	// at the first change on each mount other than the staging
	// directory's. Nil, or an error: that change fails and dooms the
	// transaction.
	NewArea func(mountPoint string) (string, error)
	// FastLookups is the tree's memory shared with the fast-lookup agent
	// (docs/fastpath.md), which the view keeps up to date; nil without the
	// fast path. The caller keeps it and closes it after the view.
	FastLookups *fastlookup.Tree
}

// NewTx makes an empty view over the host. staging must be an empty
// directory the transaction owns: its staging area for the paths on
// staging's own mount.
func NewTx(host *Host, staging string, opt TxOptions) (*Tx, error) {
	staging, err := filepath.Abs(staging)
	if err != nil {
		return nil, err
	}
	rfd, noatime, err := openRoot()
	if err != nil {
		return nil, err
	}
	home, mnt, err := openArea(rfd, staging)
	if err != nil {
		unix.Close(rfd)
		return nil, err
	}
	clock, err := sysx.NewFileClock()
	if err != nil {
		unix.Close(home.fd)
		unix.Close(rfd)
		return nil, err
	}
	v := &Tx{
		host: host, home: home, newArea: opt.NewArea, noatime: noatime, roRootFd: -1, clock: clock,
		nodes: map[FileID]*Node{}, reads: map[string]readRecord{},
		areas: map[uint64]*area{mnt: home}, areaErrs: map[uint64]error{},
		fast: opt.FastLookups,
	}
	for i, p := range append(append([]string{}, DefaultPassthrough...), opt.Excludes...) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		v.passthrough = append(v.passthrough, filepath.Clean(abs))
		if i >= len(DefaultPassthrough) {
			v.excludes = append(v.excludes, filepath.Clean(abs))
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(rfd, &st); err != nil {
		return nil, err
	}
	v.root = &Node{typ: unix.S_IFDIR, host: idOf(&st), hostPath: "/", hostFd: rfd, replayIno: st.Ino}
	v.nodes[v.root.host] = v.root
	v.noteFastDirLocked(v.root)
	return v, nil
}

var _ View = (*Tx)(nil)

// openRoot opens the root the view reaches host objects from: a private
// clone of the whole mount tree (open_tree(OPEN_TREE_CLONE)) with atime
// updates turned off (mount_setattr MOUNT_ATTR_NOATIME). O_NOATIME keeps
// reads of files and directories from touching their atime, but nothing
// does so for readlink(2), which the view needs for every symlink it
// follows: through the clone even that leaves the host untouched
// (isolation covers atimes: docs/semantics.md §1). The clone needs CAP_SYS_ADMIN; without it the view
// reaches "/" itself, and reading a host symlink may update its atime
// (noatime is false; docs/semantics.md).
func openRoot() (fd int, noatime bool, err error) {
	fd, err = unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err == nil {
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOATIME, Attr_clr: unix.MOUNT_ATTR__ATIME}
		if err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err == nil {
			return fd, true, nil
		}
		unix.Close(fd)
	}
	if err != unix.EPERM && err != unix.ENOSYS && err != unix.EINVAL {
		return -1, false, os.NewSyscallError("open_tree", err)
	}
	fd, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	return fd, false, nil
}

// roRootLocked returns a read-only noatime clone of the mount tree, made on
// first use, for host FIFOs and devices (see openSpecialLocked); without
// the privilege to clone, the view's own root.
//
// Preconditions: v.mu held.
func (v *Tx) roRootLocked() (int, error) {
	if v.roRootFd >= 0 {
		return v.roRootFd, nil
	}
	if !v.noatime {
		return v.root.hostFd, nil
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, os.NewSyscallError("open_tree", err)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOATIME, Attr_clr: unix.MOUNT_ATTR__ATIME}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("mount_setattr", err)
	}
	v.roRootFd = fd
	return fd, nil
}

// NoatimeIsolation reports whether the view reaches host objects through
// a mount with atime updates off (see openRoot).
func (v *Tx) NoatimeIsolation() bool { return v.noatime }

// Doomed returns why the transaction cannot commit, or nil.
func (v *Tx) Doomed() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.doomed
}

// Doom marks the transaction as unable to commit.
func (v *Tx) Doom(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.doomed == nil {
		v.doomed = err
	}
}

func (v *Tx) isPassthroughPath(p string) bool {
	for _, x := range v.passthrough {
		if p == x {
			return true
		}
	}
	return false
}

// hostNodeLocked returns the node for a host object found as name in dir.
//
// Preconditions: v.mu held.
func (v *Tx) hostNodeLocked(dir *Node, name string, st *unix.Stat_t) (*Node, error) {
	id := idOf(st)
	if n := v.nodes[id]; n != nil {
		if n.host == id && n.typ != st.Mode&unix.S_IFMT {
			// A reused inode number (see isHostObject).
			return nil, v.hostChanged(childPath(dir.hostPath, name), unix.ESTALE)
		}
		if n.isDir() && n.parent == nil && n != v.root {
			n.parent, n.name = dir, name
		}
		n.addNameLocked(dir, name)
		return n, nil
	}
	n := &Node{typ: st.Mode & unix.S_IFMT, host: id, hostParent: dir, hostName: name,
		hostPath: childPath(dir.hostPath, name), hostFd: -1, replayIno: st.Ino}
	if n.isDir() {
		fd, err := unix.Openat(dir.hostFd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, v.hostChanged(n.hostPath, err)
		}
		var fst unix.Stat_t
		if err := unix.Fstat(fd, &fst); err != nil || idOf(&fst) != id {
			unix.Close(fd)
			return nil, v.hostChanged(n.hostPath, unix.ESTALE)
		}
		n.hostFd = fd
		n.parent, n.name = dir, name
		n.inPlace = true
		n.passthrough = v.isPassthroughPath(n.hostPath)
	} else {
		n.locDir, n.locName = dir, name
		n.addNameLocked(dir, name)
		n.inPlace = st.Nlink > 1 && st.Mode&unix.S_IFMT == unix.S_IFREG
	}
	v.nodes[id] = n
	return n, nil
}

// hostChanged dooms the transaction: a host object changed while it was
// being read; the commit would fail validation anyway.
func (v *Tx) hostChanged(path string, err error) error {
	if v.doomed == nil {
		v.doomed = fmt.Errorf("conflict on %s (changed on the host while the transaction read it)", path)
	}
	if err == unix.ENOENT {
		return unix.ENOENT
	}
	return unix.ESTALE
}

// lookupLocked finds name in directory dir: a changed entry, else (unless
// dir is opaque) the host directory's. The host answer is recorded in the
// read set.
//
// Preconditions: v.mu held; dir is a directory.
func (v *Tx) lookupLocked(dir *Node, name string) (*Node, error) {
	if n, ok := dir.entries[name]; ok {
		if n == nil {
			return nil, unix.ENOENT
		}
		return n, nil
	}
	if dir.opaque || dir.hostFd < 0 {
		return nil, unix.ENOENT
	}
	if n, ok := dir.lookups[name]; ok {
		if n == nil {
			return nil, unix.ENOENT
		}
		return n, nil
	}
	if dir.lookups == nil {
		dir.lookups = map[string]*Node{}
	}
	var st unix.Stat_t
	err := unix.Fstatat(dir.hostFd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	p := childPath(dir.hostPath, name)
	if err == unix.ENOENT {
		v.recordAbsentLocked(p)
		dir.lookups[name] = nil
		return nil, unix.ENOENT
	}
	if err != nil {
		return nil, err
	}
	v.recordEntryLocked(p, &st)
	n, err := v.hostNodeLocked(dir, name, &st)
	if err != nil {
		return nil, err
	}
	if !n.attrSet && n.staged == "" {
		n.attr, n.attrSet = attrsOf(&st), true
	}
	dir.lookups[name] = n
	return n, nil
}

func (v *Tx) recordAbsentLocked(p string) {
	if _, ok := v.reads[p]; !ok {
		v.reads[p] = readRecord{}
	}
}

func (v *Tx) recordEntryLocked(p string, st *unix.Stat_t) {
	if _, ok := v.reads[p]; !ok {
		v.reads[p] = readRecord{exists: true, id: idOf(st), typ: st.Mode & unix.S_IFMT}
	}
}

// granules says which granules of an object, besides its name, a read
// observed.
type granules uint8

const (
	// readData: its contents (open for reading, exec, a copy-up).
	readData granules = 1 << iota
	// readMeta: its attributes — mode, owner, times, size, extended
	// attributes (stat by name, access, getxattr, a copy-up).
	readMeta
)

// recordReadLocked notes that the transaction read the granules g of host
// object n, whose attributes are st.
func (v *Tx) recordReadLocked(n *Node, st *unix.Stat_t, g granules) {
	if n.host == (FileID{}) || n.hostPath == "" {
		return
	}
	r := v.reads[n.hostPath]
	if !r.data && !r.meta {
		// The first read's attributes: validation compares them with
		// the host's, whatever was read later.
		r.exists, r.id, r.typ = true, n.host, n.typ
		r.mode, r.uid, r.gid = st.Mode, st.Uid, st.Gid
		if !n.isDir() {
			// A directory's size and times change with every entry; its
			// entries are validated by name instead.
			r.size, r.mtime, r.ctime = st.Size, st.Mtim, st.Ctim
		}
	}
	r.data = r.data || g&readData != 0
	r.meta = r.meta || g&readMeta != 0
	v.reads[n.hostPath] = r
}

// stagePath names a new staged object.
//
// The name is unguessable: under a root txexec the staging areas are
// searchable by everyone (mode 0711, never listable) so that a process of
// the transaction running as another user can execute a program the
// transaction staged — the kernel walks the path for it — while no process
// outside can reach a staged object without being told its name.
func (v *Tx) newStagedNameLocked() string {
	v.seq++
	var r [8]byte
	rand.Read(r[:])
	return strconv.Itoa(v.seq) + "-" + hex.EncodeToString(r[:])
}

// nowLocked is the time the view stamps a change of its own with: Now's
// when set, else the kernel's file clock's. The kernel stamps the
// transaction's staged objects itself as processes write them, and its
// stamps are not CLOCK_REALTIME's (sysx.FileClock): a directory stamped
// from CLOCK_REALTIME could show an mtime after that of a file written
// just after its entries changed, which Linux never shows. The file
// clock's reading is a stamp the kernel made now, so it keeps the order of
// the changes with the stamps of every file changed before or after it.
// Each stamp takes a reading of its own (two system calls, about 1.4 µs;
// a tar x of 4,000 files ran no slower): one shared by the stamps of an
// operation could precede a stamp the kernel gave in between to an object
// the operation staged. A reading the kernel refuses (it never has) dooms
// the transaction.
//
// Preconditions: v.mu held.
func (v *Tx) nowLocked() unix.Timespec {
	if v.Now != nil {
		return unix.NsecToTimespec(v.Now().UnixNano())
	}
	t, err := v.clock.Now()
	if err != nil {
		if v.doomed == nil {
			v.doomed = fmt.Errorf("read the kernel's file clock: %w", err)
		}
		return unix.NsecToTimespec(time.Now().UnixNano())
	}
	return t
}

// touchDirLocked records a change to dir's entries (its mtime and ctime).
//
// Preconditions: v.mu held.
func (v *Tx) touchDirLocked(dir *Node) {
	v.fastNodeLocked(dir, fastlookup.ChangedSelf)
	t := v.nowLocked()
	dir.changed = &t
}

// touchCtimeLocked records a change to n's inode that its backing object
// does not show (see Node.ctime).
//
// Preconditions: v.mu held.
func (v *Tx) touchCtimeLocked(n *Node) {
	v.fastNodeLocked(n, fastlookup.ChangedSelf)
	v.fastNotNativeLocked(n)
	t := v.nowLocked()
	n.ctime = &t
}

// viewCtime is n's ctime in the view given its backing object's.
func viewCtime(n *Node, backing unix.Timespec) unix.Timespec {
	if n.ctime != nil && (n.ctime.Sec > backing.Sec || n.ctime.Sec == backing.Sec && n.ctime.Nsec > backing.Nsec) {
		return *n.ctime
	}
	return backing
}

// resolveErr maps a component name to ENAMETOOLONG as Linux does.
func checkName(name string) error {
	if len(name) > 255 {
		return unix.ENAMETOOLONG
	}
	return nil
}

func splitPath(p string) []string {
	parts := strings.Split(p, "/")
	out := parts[:0]
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
