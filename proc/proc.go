package proc

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
	"txexec/internal/sysx"
)

// Dir is a view's handle on a directory (a working directory or root).
// The view that made it decides what it is; proc only keeps references.
type Dir interface {
	// Retain returns the handle with one more reference.
	Retain() Dir
	// Release drops one reference.
	Release()
}

// FS is the file-system context of a task: Linux's fs_struct. Threads
// created with CLONE_FS share one; fork copies it.
type FS struct {
	mu sync.Mutex
	// +checklocks:mu
	cwd Dir
	// +checklocks:mu
	root Dir
	// +checklocks:mu
	umask uint32
	// rootSet: SetRoot has been called (a chroot), here or in the context
	// this one was cloned from.
	// +checklocks:mu
	rootSet bool
}

// NewFS makes a context; it takes ownership of cwd and root.
func NewFS(cwd, root Dir, umask uint32) *FS { return &FS{cwd: cwd, root: root, umask: umask} }

// Get returns retained handles to cwd and root and the umask. The caller
// releases both handles.
func (f *FS) Get() (cwd, root Dir, umask uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cwd.Retain(), f.root.Retain(), f.umask
}

// SetCwd replaces the working directory, taking ownership of d.
func (f *FS) SetCwd(d Dir) {
	f.mu.Lock()
	old := f.cwd
	f.cwd = d
	f.mu.Unlock()
	old.Release()
}

// SetRoot replaces the root directory, taking ownership of d.
func (f *FS) SetRoot(d Dir) {
	f.mu.Lock()
	old := f.root
	f.root = d
	f.rootSet = true
	f.mu.Unlock()
	old.Release()
}

// RootChanged reports whether the root has been replaced (SetRoot), here
// or in the context this one was cloned from.
func (f *FS) RootChanged() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rootSet
}

// SetUmask sets the umask and returns the previous one.
func (f *FS) SetUmask(m uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.umask
	f.umask = m & 0o777
	return old
}

func (f *FS) clone() *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &FS{cwd: f.cwd.Retain(), root: f.root.Retain(), umask: f.umask, rootSet: f.rootSet}
}

func (f *FS) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cwd != nil {
		f.cwd.Release()
		f.root.Release()
		f.cwd, f.root = nil, nil
	}
}

// Cred is a thread's credentials as the kernel holds them.
type Cred struct {
	UID, EUID, SUID, FSUID uint32
	GID, EGID, SGID, FSGID uint32
	Groups                 []uint32
	CapEff                 uint64
	// CapPrm is the permitted set: access(2) by a real root checks with it.
	CapPrm uint64
}

// FS returns the file-system part of c.
func (c *Cred) FS() sysx.Cred {
	return sysx.Cred{FSUID: c.FSUID, FSGID: c.FSGID, Groups: c.Groups, CapEff: c.CapEff}
}

// HasCap reports whether the effective set holds capability n.
func (c *Cred) HasCap(n int) bool { return c.CapEff&(1<<uint(n)) != 0 }

// InGroup reports whether gid is the fsgid or a supplementary group.
func (c *Cred) InGroup(gid uint32) bool {
	if c.FSGID == gid {
		return true
	}
	for _, g := range c.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// Process is a thread group.
type Process struct {
	Tgid   int
	Parent int
	// space is its address space; Table.mu guards it (an exec replaces
	// it).
	space *Space
}

// Space is an address space (Linux's mm_struct): a process's own, which
// the processes it creates with CLONE_VM and without CLONE_THREAD (vfork)
// share until they exec. proc only tells them apart.
type Space struct{ _ byte }

// Binding is what the syscall layer attaches to a thread besides its
// process: the transaction the thread began itself, or joined (xbegin,
// docs/semantics.md §9). proc keeps it opaque and only passes it on.
type Binding interface {
	// Inherited is the binding of thread or process child, which the
	// bound thread is creating (nil: none); it runs before the child does.
	Inherited(child int) Binding
}

// Thread is one supervised task.
type Thread struct {
	Tid  int
	Proc *Process

	mu sync.Mutex
	// fs can change: threads may unshare it, and a thread that begins or
	// ends a transaction of its own moves to another view's context.
	// +checklocks:mu
	fs *FS
	// +checklocks:mu
	binding Binding
	// +checklocks:mu
	cred *Cred
	// +checklocks:mu
	credDirty bool
}

// FS returns the thread's file-system context.
func (t *Thread) FS() *FS {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fs
}

// SetFS gives the thread another file-system context and returns the one
// it had, which the caller then owns: a thread that begins a transaction
// of its own moves to a context whose handles are of that transaction's
// view, and back when it ends. Other threads that shared the old context
// keep it.
func (t *Thread) SetFS(fs *FS) *FS {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.fs
	t.fs = fs
	return old
}

// Binding returns what the syscall layer attached to the thread (nil: none).
func (t *Thread) Binding() Binding {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.binding
}

// SetBinding attaches b to the thread.
func (t *Thread) SetBinding(b Binding) {
	t.mu.Lock()
	t.binding = b
	t.mu.Unlock()
}

// Cred returns the thread's current credentials, re-reading them from the
// kernel when a call may have changed them.
func (t *Thread) Cred() (*Cred, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cred == nil || t.credDirty {
		c, err := ReadCred(t.Tid)
		if err != nil {
			return nil, err
		}
		t.cred, t.credDirty = c, false
	}
	return t.cred, nil
}

// CredsChanging marks the thread's credentials stale.
func (t *Thread) CredsChanging() {
	t.mu.Lock()
	t.credDirty = true
	t.mu.Unlock()
}

// Table is the process tree of one supervisor.
type Table struct {
	mu sync.RWMutex
	// +checklocks:mu
	threads map[int]*Thread
	// +checklocks:mu
	procs map[int]*Process
}

// NewTable makes an empty tree.
func NewTable() *Table {
	return &Table{threads: map[int]*Thread{}, procs: map[int]*Process{}}
}

// AddRoot registers the first process of the tree (the command).
func (tb *Table) AddRoot(tid int, fs *FS) *Thread {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p := &Process{Tgid: tid, Parent: os.Getpid(), space: &Space{}}
	t := &Thread{Tid: tid, Proc: p, fs: fs, credDirty: true}
	tb.threads[tid] = t
	tb.procs[tid] = p
	return t
}

// Thread returns the thread tid, or nil.
func (tb *Table) Thread(tid int) *Thread {
	tb.mu.RLock()
	defer tb.mu.RUnlock()
	return tb.threads[tid]
}

// Process returns the thread group tgid, or nil.
func (tb *Table) Process(tgid int) *Process {
	tb.mu.RLock()
	defer tb.mu.RUnlock()
	return tb.procs[tgid]
}

// Len returns the number of live threads.
func (tb *Table) Len() int {
	tb.mu.RLock()
	defer tb.mu.RUnlock()
	return len(tb.threads)
}

// Clone records that parent created child with the given clone flags.
func (tb *Table) Clone(parent, child int, flags uint64) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	pt := tb.threads[parent]
	if pt == nil {
		return
	}
	pt.mu.Lock()
	fs := pt.fs
	binding := pt.binding
	var cred *Cred
	if pt.cred != nil && !pt.credDirty {
		c := *pt.cred
		cred = &c
	}
	pt.mu.Unlock()
	if flags&unix.CLONE_FS == 0 {
		fs = fs.clone()
	}
	t := &Thread{Tid: child, fs: fs, cred: cred, credDirty: cred == nil}
	if binding != nil {
		t.binding = binding.Inherited(child)
	}
	if flags&unix.CLONE_THREAD != 0 {
		t.Proc = pt.Proc
	} else {
		ppid := pt.Proc.Tgid
		if flags&unix.CLONE_PARENT != 0 {
			ppid = pt.Proc.Parent
		}
		t.Proc = &Process{Tgid: child, Parent: ppid, space: &Space{}}
		if flags&unix.CLONE_VM != 0 {
			t.Proc.space = pt.Proc.space
		}
		tb.procs[child] = t.Proc
	}
	tb.threads[child] = t
}

// Execed records that tgid now runs a new image, called by formerTid.
func (tb *Table) Execed(tgid, formerTid int) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	t := tb.threads[formerTid]
	if t == nil {
		return
	}
	if formerTid != tgid {
		if old := tb.threads[tgid]; old != nil && old != t {
			old.FS().release()
		}
		delete(tb.threads, formerTid)
		t.Tid = tgid
		tb.threads[tgid] = t
	}
	t.Proc.space = &Space{} // a vfork child's leaves its parent's
	t.mu.Lock()
	t.credDirty = true // set-user-ID and file capabilities
	t.mu.Unlock()
}

// SpacesUsing returns one thread of each address space in which a thread
// uses fs.
func (tb *Table) SpacesUsing(fs *FS) []int {
	tb.mu.RLock()
	defer tb.mu.RUnlock()
	seen := map[*Space]bool{}
	var tids []int
	for tid, t := range tb.threads {
		if t.FS() == fs && !seen[t.Proc.space] {
			seen[t.Proc.space] = true
			tids = append(tids, tid)
		}
	}
	return tids
}

// SpaceFS returns the file-system context of the address space of thread
// tid: the one every thread there uses, if no thread of another address
// space uses it too. It is nil when there are several, or the one is
// shared with another address space (CLONE_FS without CLONE_VM), or tid
// is unknown: then no one working directory belongs to the address space.
func (tb *Table) SpaceFS(tid int) *FS {
	tb.mu.RLock()
	defer tb.mu.RUnlock()
	t := tb.threads[tid]
	if t == nil {
		return nil
	}
	space, fs := t.Proc.space, t.FS()
	for _, o := range tb.threads {
		if (o.Proc.space == space) != (o.FS() == fs) {
			return nil
		}
	}
	return fs
}

// Exited forgets thread tid.
func (tb *Table) Exited(tid int) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	t := tb.threads[tid]
	if t == nil {
		return
	}
	delete(tb.threads, tid)
	fs := t.FS()
	shared := false
	for _, o := range tb.threads {
		if o.FS() == fs {
			shared = true
		}
	}
	if !shared {
		fs.release()
	}
	if t.Proc.Tgid == tid {
		delete(tb.procs, tid)
	}
}

// Drop releases fs, a context set aside by SetFS, unless a thread of the
// tree still uses it.
func (tb *Table) Drop(fs *FS) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, o := range tb.threads {
		if o.FS() == fs {
			return
		}
	}
	fs.release()
}

// goneOr turns the failure to read a thread's /proc entry into ESRCH when
// the thread is gone (no such entry), and into an internal error (not an
// errno, which a handler would answer to a caller that is alive) else.
func goneOr(err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return unix.ESRCH
	}
	return fmt.Errorf("%v", err)
}

// ReadCred reads a thread's credentials from /proc/TID/status.
func ReadCred(tid int) (*Cred, error) {
	f, err := procfs.Status(tid, "Uid", "Gid", "Groups", "CapEff", "CapPrm")
	if err != nil {
		return nil, goneOr(err)
	}
	c := &Cred{}
	uids, err := f.IDs("Uid")
	if err != nil {
		return nil, fmt.Errorf("credentials of %d: %w", tid, err)
	}
	gids, err := f.IDs("Gid")
	if err != nil {
		return nil, fmt.Errorf("credentials of %d: %w", tid, err)
	}
	c.UID, c.EUID, c.SUID, c.FSUID = uids[0], uids[1], uids[2], uids[3]
	c.GID, c.EGID, c.SGID, c.FSGID = gids[0], gids[1], gids[2], gids[3]
	if c.Groups, err = f.Uint32s("Groups"); err != nil {
		return nil, fmt.Errorf("credentials of %d: %w", tid, err)
	}
	if c.CapEff, err = f.Uint("CapEff", 16); err != nil {
		return nil, fmt.Errorf("credentials of %d: %w", tid, err)
	}
	if c.CapPrm, err = f.Uint("CapPrm", 16); err != nil {
		return nil, fmt.Errorf("credentials of %d: %w", tid, err)
	}
	return c, nil
}

// ReadUmask reads a process's umask from /proc/PID/status (kernels before
// 4.7 have no Umask line: the default then).
func ReadUmask(pid int) (uint32, error) {
	f, err := procfs.Status(pid, "Umask")
	if err != nil {
		return 0, goneOr(err)
	}
	if !f.Has("Umask") {
		return 0o022, nil
	}
	n, err := f.Uint("Umask", 8)
	return uint32(n), err
}

// Tgids returns the thread groups of the tree.
func (tb *Table) Tgids() []int {
	tb.mu.RLock()
	defer tb.mu.RUnlock()
	out := make([]int, 0, len(tb.procs))
	for tgid := range tb.procs {
		out = append(out, tgid)
	}
	return out
}
