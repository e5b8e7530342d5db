package syscalls

import (
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/sys/unix"

	"txexec/hostlock"
	"txexec/interpose"
	"txexec/vfs"
)

// lockCommands are fcntl's commands that take, release or test record
// locks, the only ones the filter sends to the supervisor (the 64-bit
// variants have the same numbers on x86-64), with what docs/syscalls.md
// says of each.
var lockCommands = []struct {
	name  string
	value uint32
	note  string
}{
	{"F_GETLK", unix.F_GETLK, "served as F_OFD_GETLK on the caller's open file description: a conflicting lock of the tree, else one held outside on the host original (docs/semantics.md §6)"},
	{"F_SETLK", unix.F_SETLK, "served as F_OFD_SETLK on the caller's open file description, and taken for the transaction on the host original too, until it ends (docs/semantics.md §6)"},
	{"F_SETLKW", unix.F_SETLKW, "served as F_OFD_SETLKW on the caller's open file description, and taken for the transaction on the host original too, until it ends (docs/semantics.md §6)"},
	{"F_OFD_GETLK", unix.F_OFD_GETLK, "a conflicting lock of the tree, else one held outside on the host original (docs/semantics.md §6)"},
	{"F_OFD_SETLK", unix.F_OFD_SETLK, "taken for the transaction on the host original too, until it ends (docs/semantics.md §6)"},
	{"F_OFD_SETLKW", unix.F_OFD_SETLKW, "taken for the transaction on the host original too, until it ends (docs/semantics.md §6)"},
}

// lockCommandCases are fcntl's argument cases: its lock commands are
// served by Fcntl, every other command runs in the kernel.
func lockCommandCases() []Case {
	out := make([]Case, len(lockCommands))
	for i, c := range lockCommands {
		out[i] = Case{Name: c.name, When: argIs(1, c.value), Support: Partial, Handler: Fcntl, Note: c.note}
	}
	return out
}

// Advisory locks in a transaction are taken twice. The caller's own lock
// is taken on the object its descriptor is on (a staged copy, or an object
// the transaction made), where the processes of the tree exclude each
// other as on Linux; and the same lock is taken for the transaction on the
// host original (package hostlock), where processes outside wait for it
// until the transaction ends. A descriptor on the unchanged host original
// of a regular file (opened read-only before any change) is first moved
// onto the file's staged copy (moveToCopy): a lock of its own on the
// original would conflict with the transaction's. One that stays there
// (its description shared with other descriptors of the tree, or already
// holding locks there) has its locks held for it by the supervisor on a
// description of the staged copy (TreeLocks); one with no copy to give
// gets only the transaction's lock. The caller's lock on a host file is
// taken by the supervisor, not queued in the kernel, so that a conflict
// with a lock TreeLocks holds for a description the tree has closed is
// found stale. Outside a transaction (no HostLocks) the kernel runs the
// call.

// Flock implements flock(2).
func Flock(k *Kernel, c *interpose.Call) interpose.Reply {
	// A lock lives until its open file's last close, and a descriptor
	// the tree just closed may still be held by the reply that installed
	// it (see interpose.Call.SettleReplies).
	c.SettleReplies()
	fd, op := c.Args[0].Int(), c.Args[1].Uint()
	how := int(op &^ unix.LOCK_NB)
	if k.HostLocks != nil && op&lockMand == 0 && how == unix.LOCK_UN {
		return k.flockUnlock(c, int(fd))
	}
	if k.HostLocks == nil || op&lockMand != 0 || (how != unix.LOCK_SH && how != unix.LOCK_EX) {
		// Registers only: the kernel ignores LOCK_MAND and refuses
		// what is not a lock.
		return interpose.Continue()
	}
	if fd < 0 {
		return interpose.Fail(unix.EBADF)
	}
	dup, err := c.GetFD(int(fd))
	if err != nil {
		return k.reply(c, 0, err)
	}
	defer unix.Close(dup)
	var wait hostlock.Waiter
	if op&unix.LOCK_NB == 0 {
		wait = lockWaiter(c)
	}
	lt, err := k.View.LockTarget(dup)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if lt.Original < 0 {
		return interpose.Continue()
	}
	key := hostKey(lt)
	hostWait, waited := k.watchHostWait(wait)
	err = k.HostLocks.Flock(key, lt.Original, how, hostWait)
	waited()
	k.refusedHostLock(wait, err)
	unix.Close(lt.Original)
	if errors.Is(err, hostlock.ErrLost) {
		k.lockLost(lt, err)
		err = unix.EWOULDBLOCK
	}
	if err != nil {
		return k.reply(c, 0, err)
	}
	k.heldHostLock()
	try := func(fd int) error { return unix.Flock(fd, how|unix.LOCK_NB) }
	target := dup
	if lt.OnOriginal {
		if target, err = k.lockDescription(c, key, int(fd), dup); err != nil {
			return k.reply(c, 0, err)
		}
		if target < 0 {
			return k.reply(c, 0, k.TreeLocks.lock(key, dup, func() (int, error) { return k.View.LockCopy(dup, true) }, k.treeWait(c, wait), try))
		}
		defer unix.Close(target)
	}
	// The caller's own lock, on its staged copy, taken by the supervisor
	// on the caller's description, not queued in the kernel: a lock the
	// table holds (TreeLocks) for a description the tree has closed is
	// only found gone at a conflict.
	return k.reply(c, 0, k.treeWait(c, wait).retry(key, func() error { return try(target) }))
}

// flockUnlock serves flock's LOCK_UN in a transaction: through a
// description whose locks the supervisor holds (TreeLocks) it releases
// them; through any other the kernel releases the caller's own lock (the
// transaction keeps its lock on the host until it ends).
func (k *Kernel) flockUnlock(c *interpose.Call, fd int) interpose.Reply {
	if !k.TreeLocks.any() || fd < 0 {
		return interpose.Continue()
	}
	dup, err := c.GetFD(fd)
	if err != nil {
		return k.reply(c, 0, err)
	}
	defer unix.Close(dup)
	found, err := k.TreeLocks.unlock(nil, dup, func(fd int) error { return unix.Flock(fd, unix.LOCK_UN) })
	if err != nil || found {
		return k.reply(c, 0, err)
	}
	// No pointer argument was read.
	return interpose.Continue()
}

// lockDescription returns the descriptor through which the caller's lock
// through its descriptor fd, on the unchanged host original of key (dup is
// the supervisor's duplicate of it), is taken: a supervisor descriptor on
// the staged copy the caller's descriptor was moved to (moveToCopy); or
// -1 when the description stays on the original and its locks are
// TreeLocks': another descriptor shares it, it already holds locks there
// (moving it now would part it from them), or it could not be moved (and
// then TreeLocks finds no copy either: the transaction's lock only).
func (k *Kernel) lockDescription(c *interpose.Call, key hostlock.Key, fd, dup int) (int, error) {
	held, err := k.TreeLocks.holds(key, dup)
	if err != nil || held {
		return -1, err
	}
	shared, err := interpose.DescriptionShared(c.Tid, fd, k.treePids(c))
	if err != nil || shared {
		return -1, err
	}
	return k.moveToCopy(c, fd, dup)
}

// treePids are the processes of the tree, c's caller among them.
func (k *Kernel) treePids(c *interpose.Call) []int {
	pids := []int{c.Tid}
	if k.Procs != nil {
		pids = append(pids, k.Procs.Tgids()...)
	}
	return pids
}

// treeWait is how c's lock request on a staged copy meets the tree's
// conflicting locks: failing, or waiting with wait.
func (k *Kernel) treeWait(c *interpose.Call, wait hostlock.Waiter) treeWait {
	return treeWait{t: k.TreeLocks, wait: wait, pids: func() []int { return k.treePids(c) }}
}

// moveToCopy moves the caller's descriptor fd, on the unchanged host
// original of a regular file (dup is the supervisor's duplicate of it),
// onto a new open file description of the file's staged copy, copying the
// file up if need be, so that the caller's lock can be taken there, where
// the tree's other locks on the file are (vfs.Tx.LockCopy). The new
// description has the old one's access mode, status flags and offset, and
// the descriptor its close-on-exec flag; the caller's descriptor number is
// replaced atomically in its descriptor table (interpose.Call.ReplaceFD).
// It returns the supervisor's descriptor on the new description, or -1
// when the descriptor stays on the original: when the view has no copy to
// give (vfs.Tx.LockCopy). The caller has made sure that no other
// descriptor shares the description (lockDescription): moving one would
// part it from the others, which would neither hold nor meet its lock,
// and a lock on a description only its caller holds goes with that
// caller's close: flock(1) on an inherited descriptor would lose it when
// it exits. A descriptor dup'ed by another thread while the call is
// served is not seen, and keeps the old description.
//
// Mappings of the old description stay on the original, whose bytes the
// copy has.
func (k *Kernel) moveToCopy(c *interpose.Call, fd, dup int) (int, error) {
	nfd, err := k.View.LockCopy(dup, true)
	if err != nil || nfd < 0 {
		return -1, err
	}
	off, err := unix.Seek(dup, 0, unix.SEEK_CUR)
	if err == nil {
		_, err = unix.Seek(nfd, off, unix.SEEK_SET)
	}
	var cloexec, same bool
	if err == nil {
		cloexec, err = interpose.CloseOnExec(c.Tid, fd)
	}
	if err == nil {
		// Not closed, or replaced, by another thread since GetFD.
		same, err = interpose.SameDescription(c.Tid, fd, dup)
	}
	if err == nil && same {
		err = c.ReplaceFD(nfd, fd, cloexec)
		if err == unix.ENOENT {
			err = unix.ESRCH // the caller has gone
		}
	}
	if err != nil || !same {
		unix.Close(nfd)
		return -1, err
	}
	return nfd, nil
}

// Fcntl implements fcntl(2) for its record-lock commands (the filter lets
// the kernel run the others). Traditional POSIX locks (F_SETLK, F_GETLK,
// lockf) are taken as OFD locks on the caller's open file description:
// the supervisor cannot take a lock owned by the caller's process, and it
// must not let the kernel re-read the struct flock it read.
func Fcntl(k *Kernel, c *interpose.Call) interpose.Reply {
	c.SettleReplies()
	fd, cmd := c.Args[0].Int(), c.Args[1].Uint()
	if k.HostLocks == nil || !isLockCommand(cmd) {
		// Registers only so far: no transaction to share locks with.
		return interpose.Continue()
	}
	if fd < 0 {
		return interpose.Fail(unix.EBADF)
	}
	dup, err := c.GetFD(int(fd))
	if err != nil {
		return k.reply(c, 0, err)
	}
	defer unix.Close(dup)
	addr := c.Args[2].Pointer()
	var lk unix.Flock_t
	if err := interpose.ReadValue(c.Memory, addr, &lk); err != nil {
		return interpose.Fail(unix.EFAULT)
	}
	ofd := cmd == unix.F_OFD_GETLK || cmd == unix.F_OFD_SETLK || cmd == unix.F_OFD_SETLKW
	getlk := cmd == unix.F_GETLK || cmd == unix.F_OFD_GETLK
	if ofd && lk.Pid != 0 {
		return interpose.Fail(unix.EINVAL)
	}
	switch {
	case lk.Type == unix.F_RDLCK || lk.Type == unix.F_WRLCK:
	case lk.Type == unix.F_UNLCK && !getlk:
	default:
		return interpose.Fail(unix.EINVAL)
	}
	start, end, err := lockRange(dup, &lk)
	if err != nil {
		return k.reply(c, 0, err)
	}
	lt, err := k.View.LockTarget(dup)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if lt.Original >= 0 {
		defer unix.Close(lt.Original)
	}
	own := lt.Original < 0 || !lt.OnOriginal // the caller's own lock has an object of its own
	abs := absolute(lk.Type, start, end)
	if getlk {
		res := unix.Flock_t{Type: unix.F_UNLCK}
		tree := dup
		test := func(tree int) error {
			if tree < 0 {
				return nil
			}
			res = abs
			return unix.FcntlFlock(uintptr(tree), unix.F_OFD_GETLK, &res)
		}
		if own {
			err = test(tree)
		} else {
			// The tree's locks are on the staged copy, if the file has
			// one; a description on the original holds none of them,
			// unless TreeLocks holds them there for it, on its own
			// description of the copy (which alone does not report
			// them as conflicts).
			key, found := hostKey(lt), false
			if k.TreeLocks.has(key) {
				// A lock of a description the tree has closed is not
				// shown.
				if _, err = k.TreeLocks.prune(key, k.treePids(c)); err == nil {
					err = k.TreeLocks.copyOf(key, dup, func(fd int) error { found = fd >= 0; return test(fd) })
				}
			}
			if err == nil && !found {
				if tree, err = k.View.LockCopy(dup, false); err != nil {
					return k.reply(c, 0, err)
				}
				if tree >= 0 {
					defer unix.Close(tree)
				}
				err = test(tree)
			}
		}
		if err != nil {
			return k.reply(c, 0, err)
		}
		if res.Type == unix.F_UNLCK && lt.Original >= 0 {
			if res, err = k.HostLocks.Test(hostKey(lt), lt.Original, lk.Type, start, end); err != nil {
				return k.reply(c, 0, err)
			}
		}
		if res.Type == unix.F_UNLCK {
			lk.Type = unix.F_UNLCK // Linux leaves the rest as the caller gave it
		} else {
			lk = res
		}
		return k.reply(c, 0, interpose.WriteValue(c.Memory, addr, &lk))
	}
	fl, err := unix.FcntlInt(uintptr(dup), unix.F_GETFL, 0)
	if err != nil {
		return k.reply(c, 0, err)
	}
	// check_fmode_for_setlk: a read lock needs the file open for reading,
	// a write lock for writing.
	switch acc := fl & unix.O_ACCMODE; {
	case lk.Type == unix.F_RDLCK && acc == unix.O_WRONLY, lk.Type == unix.F_WRLCK && acc == unix.O_RDONLY:
		return interpose.Fail(unix.EBADF)
	}
	if lk.Type == unix.F_UNLCK {
		if !own {
			// Its locks are TreeLocks', if any.
			key := hostKey(lt)
			_, err := k.TreeLocks.unlock(&key, dup, func(fd int) error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &abs) })
			return k.reply(c, 0, err)
		}
		return k.reply(c, 0, unix.FcntlFlock(uintptr(dup), unix.F_OFD_SETLK, &abs))
	}
	var wait hostlock.Waiter
	if cmd == unix.F_SETLKW || cmd == unix.F_OFD_SETLKW {
		wait = lockWaiter(c)
	}
	try := func(fd int) error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &abs) }
	target := dup
	if lt.Original >= 0 {
		hostWait, waited := k.watchHostWait(wait)
		err := k.HostLocks.Record(hostKey(lt), lt.Original, lk.Type, start, end, hostWait)
		waited()
		k.refusedHostLock(wait, err)
		if err != nil {
			return k.reply(c, 0, err)
		}
		k.heldHostLock()
		if !own {
			nfd, err := k.lockDescription(c, hostKey(lt), int(fd), dup)
			if err != nil {
				return k.reply(c, 0, err)
			}
			if nfd < 0 {
				return k.reply(c, 0, k.TreeLocks.lock(hostKey(lt), dup, func() (int, error) { return k.View.LockCopy(dup, true) }, k.treeWait(c, wait), try))
			}
			defer unix.Close(nfd)
			target = nfd
		}
	}
	return k.reply(c, 0, k.treeWait(c, wait).retry(hostKey(lt), func() error { return try(target) }))
}

// lockMand is flock's LOCK_MAND, which Linux has ignored (with success)
// since 5.15.
const lockMand = 32

func isLockCommand(cmd uint32) bool {
	for _, v := range lockCommands {
		if v.value == cmd {
			return true
		}
	}
	return false
}

func hostKey(lt vfs.LockTarget) hostlock.Key { return hostlock.Key{Dev: lt.ID.Dev, Ino: lt.ID.Ino} }

// lockLost dooms the transaction: it no longer holds a lock it took.
func (k *Kernel) lockLost(lt vfs.LockTarget, err error) {
	err = fmt.Errorf("the transaction %w (%s)", err, lt.Path)
	k.Logf("txexec: %v", err)
	if k.OnInternalError != nil {
		k.OnInternalError(err)
	}
}

// lockRange turns the caller's struct flock into the absolute range
// [start, end) it names (end hostlock.EOF: to the end of the file, however
// far it grows), with the errors of the kernel's flock_to_posix_lock.
// SEEK_CUR and SEEK_END count from the caller's description: its offset,
// and the size of the file it is open on, which is the view's.
func lockRange(fd int, lk *unix.Flock_t) (start, end int64, err error) {
	switch lk.Whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		if start, err = unix.Seek(fd, 0, unix.SEEK_CUR); err != nil {
			return 0, 0, err
		}
	case unix.SEEK_END:
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, 0, err
		}
		start = st.Size
	default:
		return 0, 0, unix.EINVAL
	}
	if lk.Start > math.MaxInt64-start {
		return 0, 0, unix.EOVERFLOW
	}
	start += lk.Start
	if start < 0 {
		return 0, 0, unix.EINVAL
	}
	switch {
	case lk.Len > 0:
		if lk.Len-1 > math.MaxInt64-start {
			return 0, 0, unix.EOVERFLOW
		}
		end = start + lk.Len
		if end < 0 { // start + len == 2^63: the last byte is the largest offset
			end = hostlock.EOF
		}
	case lk.Len < 0:
		end = start
		start += lk.Len
		if start < 0 {
			return 0, 0, unix.EINVAL
		}
	default:
		end = hostlock.EOF
	}
	return start, end, nil
}

// absolute is the struct flock of lock typ on [start, end).
func absolute(typ int16, start, end int64) unix.Flock_t {
	lk := unix.Flock_t{Type: typ, Whence: unix.SEEK_SET, Start: start}
	if end != hostlock.EOF {
		lk.Len = end - start
	}
	return lk
}

// lockPollMax bounds the pause between two attempts of a blocking lock.
const lockPollMax = 20 * time.Millisecond

// lockWaiter is the wait between attempts of c's blocking lock request. A
// lock the supervisor waits for is not queued in the kernel for the
// caller, who waits for the reply killably (interpose.Call.Interrupted):
// so the supervisor tries again, at growing intervals up to lockPollMax,
// and stops when the caller has gone (ESRCH) or a signal arrived for it
// (ERESTARTSYS: the kernel restarts the call or fails it with EINTR, as
// after a signal in its own wait). The worker that waits is replaced in
// receiving calls by another (Call.WillWait), as for a FIFO open that
// waits.
func lockWaiter(c *interpose.Call) hostlock.Waiter {
	pause := time.Millisecond
	return func() error {
		if pause == time.Millisecond {
			c.WillWait()
		}
		time.Sleep(pause)
		pause = min(2*pause, lockPollMax)
		if err := c.Valid(); err != nil {
			return err
		}
		intr, err := c.Interrupted()
		switch {
		case err != nil:
			return err
		case intr:
			return interpose.ERESTARTSYS
		}
		return nil
	}
}
