package syscalls

import (
	"sync"

	"golang.org/x/sys/unix"

	"txexec/hostlock"
	"txexec/interpose"
)

// TreeLocks holds the advisory locks processes of a transaction take
// through open file descriptions that stay on an unchanged host original:
// a description other descriptors share, which moveToCopy does not move
// (the shell's "exec 9<lockfile" before "flock 9"). Its own lock cannot be
// taken on the original, where it would conflict with the transaction's
// (package hostlock); so the supervisor takes it for the description on a
// description of its own of the file's staged copy, where the tree's other
// locks on the file are, and the kernel makes them exclude each other.
//
// A description's lock lasts until it is unlocked through it, or until its
// last close, which the supervisor does not see: it keeps a duplicate of
// the description as its identity, and drops the lock when, at a conflict,
// no process of the tree refers to the description any more (prune).
// Everything goes when the transaction ends (Release).
type TreeLocks struct {
	mu       sync.Mutex
	files    map[hostlock.Key][]*treeHolder
	released bool
}

// treeHolder is one description of the tree on a host original.
type treeHolder struct {
	// desc is the supervisor's duplicate of the tree's description: its
	// identity, which also keeps its number from being reused.
	desc int
	// copy is the supervisor's description of the staged copy, through
	// which the description's flock and record locks are held.
	copy int
}

// NewTreeLocks returns an empty table.
func NewTreeLocks() *TreeLocks { return &TreeLocks{files: map[hostlock.Key][]*treeHolder{}} }

// Release drops every lock: the transaction has ended.
func (t *TreeLocks) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, hs := range t.files {
		for _, h := range hs {
			h.close()
		}
	}
	t.files = map[hostlock.Key][]*treeHolder{}
	t.released = true
}

func (h *treeHolder) close() {
	unix.Close(h.copy)
	unix.Close(h.desc)
	h.copy, h.desc = -1, -1
}

// has reports whether descriptions of the tree hold locks on key.
func (t *TreeLocks) has(key hostlock.Key) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.files[key]) > 0
}

// any reports whether descriptions of the tree hold locks on any file.
func (t *TreeLocks) any() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.files) > 0
}

// findLocked returns key's holder for the description of the supervisor's
// descriptor dup, or nil.
//
// Preconditions: t.mu held.
func (t *TreeLocks) findLocked(key hostlock.Key, dup int) (*treeHolder, error) {
	for _, h := range t.files[key] {
		same, err := interpose.SameOwnDescription(h.desc, dup)
		if err != nil || same {
			return h, err
		}
	}
	return nil, nil
}

// holds reports whether the description of dup holds locks in the table.
func (t *TreeLocks) holds(key hostlock.Key, dup int) (bool, error) {
	if t == nil {
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, err := t.findLocked(key, dup)
	return h != nil, err
}

// lock runs try, a non-blocking attempt, on the staged-copy description of
// dup's description on key, made with open (returning -1 when the file has
// no copy to give, and then try is not run: the description has only the
// transaction's lock). A conflict fails with EWOULDBLOCK, or is waited for
// by tree.wait.
func (t *TreeLocks) lock(key hostlock.Key, dup int, open func() (int, error), tree treeWait, try func(fd int) error) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	h, err := t.findLocked(key, dup)
	if err == nil && h == nil && !t.released {
		h = &treeHolder{desc: -1, copy: -1}
		if h.copy, err = open(); err == nil && h.copy >= 0 {
			h.desc, err = unix.FcntlInt(uintptr(dup), unix.F_DUPFD_CLOEXEC, 0)
		}
		if err != nil || h.copy < 0 {
			unix.Close(h.copy)
			h = nil
		} else {
			t.files[key] = append(t.files[key], h)
		}
	}
	t.mu.Unlock()
	if err != nil || h == nil {
		return err
	}
	return tree.retry(key, func() error {
		if h.copy < 0 {
			// Dropped meanwhile: the tree closed the description (the
			// caller closed its descriptor while the call was served).
			return unix.EBADF
		}
		return try(h.copy)
	})
}

// unlock runs unlock on the staged-copy description of dup's description
// on key, if the table has one; with any key, it looks among every file's.
// It reports whether it found one.
func (t *TreeLocks) unlock(key *hostlock.Key, dup int, unlock func(fd int) error) (bool, error) {
	if t == nil {
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.files {
		if key != nil && k != *key {
			continue
		}
		h, err := t.findLocked(k, dup)
		if err != nil || h != nil {
			if h != nil {
				err = unlock(h.copy)
			}
			return h != nil, err
		}
	}
	return false, nil
}

// copyOf runs f on the staged-copy description of dup's description on
// key, or on -1 when the table has none.
func (t *TreeLocks) copyOf(key hostlock.Key, dup int, f func(fd int) error) error {
	fd := -1
	if t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		h, err := t.findLocked(key, dup)
		if err != nil {
			return err
		}
		if h != nil {
			fd = h.copy
		}
	}
	return f(fd)
}

// prune drops the holders on key whose description no process of pids
// refers to any more (the description's last close in the tree, which
// releases its locks on Linux), and reports whether it dropped any.
func (t *TreeLocks) prune(key hostlock.Key, pids []int) (bool, error) {
	if t == nil {
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	hs := t.files[key]
	kept := hs[:0]
	var err error
	for _, h := range hs {
		held := true
		if err == nil {
			held, err = interpose.DescriptionHeld(h.desc, pids)
		}
		if held || err != nil {
			kept = append(kept, h)
		} else {
			h.close()
		}
	}
	dropped := len(kept) < len(hs)
	if len(kept) == 0 {
		delete(t.files, key)
	} else {
		t.files[key] = kept
	}
	return dropped, err
}

// treeWait is how a lock request of the tree on a host original's staged
// copy waits for a conflicting lock.
type treeWait struct {
	t    *TreeLocks
	wait hostlock.Waiter // nil: the request does not wait
	pids func() []int    // the tree's processes
}

// retry runs try, a non-blocking lock attempt on the staged copy of key
// (under t.mu, so that no holder's description closes under it), until it
// stops meeting a conflict. At a conflict, holders whose descriptions the
// tree has closed are dropped first, and if one was, try runs again at
// once; else it fails with EWOULDBLOCK or waits.
func (w treeWait) retry(key hostlock.Key, try func() error) error {
	for {
		var err error
		if w.t != nil {
			w.t.mu.Lock()
			err = try()
			w.t.mu.Unlock()
		} else {
			err = try()
		}
		if err != unix.EWOULDBLOCK {
			return err
		}
		if w.t.has(key) {
			dropped, perr := w.t.prune(key, w.pids())
			if perr != nil {
				return perr
			}
			if dropped {
				continue
			}
		}
		if w.wait == nil {
			return err
		}
		if werr := w.wait(); werr != nil {
			return werr
		}
	}
}
