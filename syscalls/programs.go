package syscalls

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"txexec/hostlock"
	"txexec/interpose"
	"txexec/proc"
	"txexec/signals"
	"txexec/txn"
	"txexec/vfs"
)

// Programs serves the transactions programs begin themselves (the xbegin
// family, txapi.go; docs/semantics.md §9). Under a supervisor without a
// transaction of its own (--passthrough, --programs) every thread that
// calls xbegin gets a transaction with a view of its own, which the
// threads and processes it then creates join, while the program's other
// threads keep the host's view: the view a call is served by is chosen per
// thread (Kernel.serving), not per supervisor. Several such transactions
// run at once and validate against each other and the host exactly as
// separate txexec processes do (txn.Manager over the same store). Inside a
// command-tree transaction xbegin nests flat; xpause escapes to the host
// in both cases.
//
// In-program transactions never take the commit lock early
// (txn.Manager.BeginPriority): a transaction holding it exclusively from
// its begin would stop every other in-program transaction of the program
// at its commit, while the holder may itself wait for them (a thread
// pool, a TX_ORDERED predecessor): a deadlock. Starvation is bounded by
// the program's retries instead (xrun's max_tries).
//
// Lock order: proc's Table.mu (proc.Binding.Inherited runs under it),
// then binding.mu, then programTx.mu and proc's FS.mu and Thread.mu;
// Programs.mu is a leaf. None is held across a commit, an abort or an
// ordered wait.
type Programs struct {
	// Manager gives the manager of in-program transactions, opening the
	// state directory the first time (nil inside a command-tree
	// transaction, where xbegin nests flat).
	Manager func() (*txn.Manager, error)
	// Host serves a paused thread of a command-tree transaction.
	Host *vfs.Host
	// Signals is the --signals policy of in-program transactions.
	Signals signals.Policy

	// order orders TX_ORDERED commits: one queue per supervisor.
	order txn.CommitOrder
	// used turns on the per-thread choice of view at the first xbegin:
	// until then every call is served by the supervisor's own view
	// without looking its thread up.
	used atomic.Bool
	// base is the supervisor's own kernel (EnablePrograms).
	base *Kernel
	// wg counts abandoned transactions being aborted (exitedLocked).
	wg sync.WaitGroup

	mu sync.Mutex
	// host is base with the host's view, for paused threads of a
	// command-tree transaction (made at the first xpause).
	// +checklocks:mu
	host *Kernel
	// live are the in-program transactions not yet ended.
	// +checklocks:mu
	live map[*programTx]bool
}

// EnablePrograms makes k serve the xbegin family with p.
func (k *Kernel) EnablePrograms(p *Programs) {
	p.base = k
	k.Programs = p
}

// programTx is one in-program transaction.
type programTx struct {
	t *txn.Transaction
	// k is the supervisor's kernel with this transaction's view, locks and
	// signal router: what serves its threads.
	k      *Kernel
	flags  uint32
	seq    uint64
	router *signals.Router
	locks  func()
	// gone is closed when the owner exits with the transaction open: an
	// ordered wait for it gives up.
	gone     chan struct{}
	goneOnce sync.Once

	mu sync.Mutex
	// members are the threads that joined, besides the owner.
	// +checklocks:mu
	members map[int]bool
	// ended: committed or aborted; its view is closed.
	// +checklocks:mu
	ended bool
}

// binding is a thread's state in the API, attached to its proc.Thread.
type binding struct {
	mu sync.Mutex
	// tx is the in-program transaction the thread is in (nil: the
	// supervisor's own view).
	// +checklocks:mu
	tx *programTx
	// began: the thread began tx, and its outermost xend ends it.
	// +checklocks:mu
	began bool
	// depth counts the thread's xbegin calls not yet matched by xend.
	// +checklocks:mu
	depth int
	// paused: between xpause and xresume.
	// +checklocks:mu
	paused bool
	// aside is the context set aside: in a transaction, the one the
	// thread had before it (paused: the transaction's own).
	// +checklocks:mu
	aside *proc.FS
	// outside: a thread of a command-tree transaction served by the host
	// (created between xpause and xresume).
	// +checklocks:mu
	outside bool
	// attempt counts the conflicts the thread's transactions lost in a
	// row: xbegin's answer.
	// +checklocks:mu
	attempt int64
}

// Inherited implements proc.Binding: a thread or process created inside
// an in-program transaction joins it; one created while paused stays out.
func (b *binding) Inherited(child int) proc.Binding {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.tx != nil && !b.paused:
		tx := b.tx
		tx.mu.Lock()
		defer tx.mu.Unlock()
		if tx.ended {
			return nil
		}
		tx.members[child] = true
		return &binding{tx: tx}
	case b.tx == nil && (b.paused || b.outside):
		return &binding{outside: true}
	}
	return nil
}

// programs is the API's state; nil where no one enabled it (the calls then
// answer ENOSYS, as the kernel would).
func (k *Kernel) programs() *Programs { return k.Programs }

// serving is the kernel that serves thread tid: its in-program
// transaction's, the host's while paused, else k. A thread of a
// transaction that ended under it (its owner exited) gets EIO.
func (k *Kernel) serving(tid int) (*Kernel, error) {
	p := k.Programs
	if p == nil || !p.used.Load() {
		return k, nil
	}
	th := k.Procs.Thread(tid)
	if th == nil {
		return k, nil
	}
	b, _ := th.Binding().(*binding)
	if b == nil {
		return k, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.tx == nil && (b.paused || b.outside):
		return p.hostKernel(), nil
	case b.tx == nil || b.paused:
		return p.base, nil
	}
	b.tx.mu.Lock()
	defer b.tx.mu.Unlock()
	if b.tx.ended {
		return nil, unix.EIO
	}
	return b.tx.k, nil
}

// hostKernel is base with the host's view.
func (p *Programs) hostKernel() *Kernel {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.host == nil {
		h := *p.base
		h.View = p.Host
		h.Signals, h.HostLocks, h.TreeLocks, h.HostLockWatch, h.OnInternalError = nil, nil, nil, nil, nil
		p.host = &h
	}
	return p.host
}

// bindingOf returns thread tid and its binding, made on first use;
// ENOSYS when the supervisor serves no in-program API (p is nil).
func (p *Programs) bindingOf(tid int) (*proc.Thread, *binding, error) {
	if p == nil {
		return nil, nil, unix.ENOSYS
	}
	th := p.base.Procs.Thread(tid)
	if th == nil {
		return nil, nil, errUnknownThread(tid)
	}
	b, _ := th.Binding().(*binding)
	if b == nil {
		b = &binding{}
		th.SetBinding(b)
	}
	return th, b, nil
}

// treeMode reports whether the supervisor's own view is a command-tree
// transaction, in which xbegin nests flat.
func (p *Programs) treeMode() bool { return p.base.inTransaction() || p.Manager == nil }

// begin serves xbegin.
func (p *Programs) begin(c *interpose.Call, flags uint32, seq uint64) (int64, error) {
	th, b, err := p.bindingOf(c.Tid)
	if err != nil {
		return 0, err
	}
	p.used.Store(true)
	b.mu.Lock()
	switch {
	case b.paused || b.outside:
		b.mu.Unlock()
		return 0, unix.EINVAL
	case b.tx != nil || p.treeMode():
		// Flat nesting: the thread is in a transaction already.
		b.depth++
		attempt := b.attempt
		if b.tx == nil {
			attempt = 0
		}
		b.mu.Unlock()
		return attempt, nil
	}
	attempt := b.attempt
	b.mu.Unlock()
	if err := c.Valid(); err != nil {
		return 0, err
	}
	tx, fs, err := p.start(c.Tid, th, flags, seq)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	b.tx, b.began, b.depth = tx, true, 1
	b.aside = th.SetFS(fs)
	b.mu.Unlock()
	if p.base.AgentOff != nil {
		// The thread's lookups are its transaction's from now on: the
		// fast-lookup agent of its process, which makes them on the
		// host (--passthrough --fast-lookups), forwards every one.
		p.base.AgentOff(c.Tid)
	}
	return attempt, nil
}

// InTransaction reports whether thread tid has a transaction of its own
// (begun by xbegin, not one nesting flat in the tree's).
func (p *Programs) InTransaction(tid int) bool {
	if p == nil {
		return false
	}
	th := p.base.Procs.Thread(tid)
	if th == nil {
		return false
	}
	b, _ := th.Binding().(*binding)
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tx != nil
}

// start begins an in-program transaction for thread th and makes its
// context in the transaction's view, from the one it has.
func (p *Programs) start(tid int, th *proc.Thread, flags uint32, seq uint64) (*programTx, *proc.FS, error) {
	m, err := p.Manager()
	if err != nil {
		p.base.Logf("txexec: xbegin of pid %d: %v", tid, err)
		return nil, nil, unix.EIO
	}
	if flags&TxNondurable != 0 && m.Durable {
		nd := *m
		nd.Durable = false
		m = &nd
	}
	cwd, root, umask := th.FS().Get()
	defer cwd.Release()
	defer root.Release()
	cwdPath, err := p.base.View.DirPath(cwd.(*vfs.Handle))
	if err != nil {
		return nil, nil, err
	}
	rootPath, err := p.base.View.DirPath(root.(*vfs.Handle))
	if err != nil {
		return nil, nil, err
	}
	t, err := m.Begin(commandOf(th.Proc.Tgid), cwdPath)
	if err != nil {
		p.base.Logf("txexec: xbegin of pid %d: begin transaction: %v", tid, err)
		return nil, nil, unix.EIO
	}
	txCwd, err := t.View.OpenDir(cwdPath)
	if err != nil {
		t.Abort(err.Error())
		return nil, nil, unix.ENOENT
	}
	txRoot, err := t.View.OpenDir(rootPath)
	if err != nil {
		txCwd.Release()
		t.Abort(err.Error())
		return nil, nil, unix.ENOENT
	}
	tx := &programTx{t: t, flags: flags, seq: seq, gone: make(chan struct{}), members: map[int]bool{}}
	k := *p.base
	k.View = t.View
	k.OnInternalError = t.View.Doom
	if flags&TxErrorUnsupported != 0 {
		k.Unsupported, k.UnsupportedBy = PolicyError, "TX_ERROR_UNSUPPORTED"
	}
	hostLocks, treeLocks := hostlock.NewTable(), NewTreeLocks()
	k.HostLocks, k.TreeLocks = hostLocks, treeLocks
	tx.locks = func() { treeLocks.Release(); hostLocks.Release() }
	ownerTgid := th.Proc.Tgid
	procs := p.base.Procs
	// Inside are the transaction's threads and processes, and the owner's
	// whole process: its other threads share its memory anyway, and
	// holding a signal to them until commit would stop a runtime's own
	// signals (Go preempts goroutines with tgkill).
	tx.router = signals.NewRouter(p.Signals, signals.ProcTasks{}, func(id int) bool {
		if id == ownerTgid {
			return true
		}
		if t := procs.Thread(id); t != nil {
			if t.Proc.Tgid == ownerTgid {
				return true
			}
			if b, _ := t.Binding().(*binding); b != nil && b.in(tx) {
				return true
			}
		}
		return tx.hasProcess(procs, id)
	}, os.Getpid(), p.base.Logf)
	k.Signals = tx.router
	tx.k = &k
	p.mu.Lock()
	if p.live == nil {
		p.live = map[*programTx]bool{}
	}
	p.live[tx] = true
	p.mu.Unlock()
	return tx, proc.NewFS(txCwd, txRoot, umask), nil
}

// in reports whether the thread is in tx and not paused.
func (b *binding) in(tx *programTx) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tx == tx && !b.paused
}

// hasProcess reports whether thread group id has a member of tx.
func (tx *programTx) hasProcess(procs *proc.Table, id int) bool {
	tx.mu.Lock()
	members := make([]int, 0, len(tx.members))
	for tid := range tx.members {
		members = append(members, tid)
	}
	tx.mu.Unlock()
	for _, tid := range members {
		if t := procs.Thread(tid); t != nil && t.Proc.Tgid == id {
			return true
		}
	}
	return false
}

// commandOf is what the store records as an in-program transaction's
// command (txexec history): "xbegin" and the program's arguments.
func commandOf(tgid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tgid) + "/cmdline")
	argv := []string{"xbegin"}
	if err == nil {
		argv = append(argv, strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")...)
	}
	return argv
}

// end serves xend.
func (p *Programs) end(k *Kernel, c *interpose.Call) error {
	th, b, err := p.bindingOf(c.Tid)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.depth == 0 || b.paused || b.outside {
		b.mu.Unlock()
		return unix.EINVAL
	}
	tx := b.tx
	if b.depth > 1 || (tx != nil && !b.began) {
		b.depth--
		b.mu.Unlock()
		return nil
	}
	if tx == nil {
		// The outermost xend inside a command-tree transaction: the
		// tree's transaction commits when the tree ends.
		b.depth = 0
		b.mu.Unlock()
		if v, ok := k.View.(*vfs.Tx); ok && v.Doomed() != nil {
			return unix.ECANCELED
		}
		return nil
	}
	b.mu.Unlock()
	tx.mu.Lock()
	busy := len(tx.members) > 0
	tx.mu.Unlock()
	if busy {
		// A thread or process that joined still runs: ending now would
		// leave it in a view that is gone.
		return unix.EBUSY
	}
	doomed := tx.t.View.Doomed() != nil
	if tx.flags&TxOrdered != 0 && !doomed {
		c.WillWait() // for the transactions ordered before this one
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-tx.gone:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := p.order.Wait(ctx, tx.seq)
		cancel()
		if err != nil {
			return unix.ECANCELED // the owner exited meanwhile
		}
	}
	if err := c.Valid(); err != nil {
		return err // the owner is gone: exitedLocked aborts
	}
	tx.mu.Lock()
	if tx.ended {
		tx.mu.Unlock()
		return unix.ECANCELED
	}
	tx.ended = true
	tx.mu.Unlock()
	err = tx.t.Commit()
	conflict := false
	var ce *txn.CommitError
	switch {
	case err == nil:
		tx.router.Commit(func() {})
	case errors.As(err, &ce):
		tx.router.Abort()
		conflict = ce.Conflict
		var xa *AbortedError
		if !conflict && !errors.As(ce.Err, &xa) {
			k.Logf("txexec: transaction %d of pid %d aborted: %v", tx.t.ID, c.Tid, ce.Err)
		}
	default:
		// Committed; its write-through failed and recovery finishes it.
		tx.router.Commit(func() {})
		k.Logf("txexec: transaction %d of pid %d: %v", tx.t.ID, c.Tid, err)
		err = nil
	}
	p.leave(th, b, tx, conflict)
	if !conflict && tx.flags&TxOrdered != 0 {
		// A conflicted attempt keeps its number for its retry.
		p.order.Done(tx.seq)
	}
	switch {
	case err == nil:
		return nil
	case conflict:
		return unix.EAGAIN
	case doomed:
		return unix.ECANCELED
	}
	return unix.EIO
}

// leave returns thread th to the context it had before tx, which has
// ended: conflict says it lost one (the next xbegin answers one attempt
// more).
func (p *Programs) leave(th *proc.Thread, b *binding, tx *programTx, conflict bool) {
	tx.locks()
	b.mu.Lock()
	inTx := th.SetFS(b.aside)
	b.tx, b.began, b.depth, b.aside, b.paused = nil, false, 0, nil, false
	if conflict {
		b.attempt++
	} else {
		b.attempt = 0
	}
	b.mu.Unlock()
	p.base.Procs.Drop(inTx)
	p.mu.Lock()
	delete(p.live, tx)
	p.mu.Unlock()
}

// abort serves xabort: the transaction is doomed; its xend rolls it back.
func (p *Programs) abort(k *Kernel, c *interpose.Call) error {
	_, b, err := p.bindingOf(c.Tid)
	if err != nil {
		return err
	}
	b.mu.Lock()
	depth, paused, tx := b.depth, b.paused, b.tx
	b.mu.Unlock()
	if depth == 0 || paused {
		return unix.EINVAL
	}
	why := &AbortedError{Pid: c.Tid}
	switch {
	case tx != nil:
		tx.t.View.Doom(why)
	case k.OnInternalError != nil:
		k.OnInternalError(why)
	default:
		return unix.EINVAL
	}
	return nil
}

// AbortedError dooms a transaction whose program called xabort.
type AbortedError struct{ Pid int }

func (e *AbortedError) Error() string { return fmt.Sprintf("pid %d called xabort", e.Pid) }

// pause serves xpause.
func (p *Programs) pause(k *Kernel, c *interpose.Call) error {
	th, b, err := p.bindingOf(c.Tid)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.depth == 0 || b.paused {
		return unix.EINVAL
	}
	if b.tx != nil {
		b.aside = th.SetFS(b.aside)
		b.paused = true
		return nil
	}
	// In the command tree's transaction: a context of the host's.
	host, err := hostFS(k.View, p.Host, th.FS())
	if err != nil {
		return err
	}
	b.aside = th.SetFS(host)
	b.paused = true
	return nil
}

// hostFS makes a context in the host's view like fs, of view v.
func hostFS(v vfs.View, host *vfs.Host, fs *proc.FS) (*proc.FS, error) {
	cwd, root, umask := fs.Get()
	defer cwd.Release()
	defer root.Release()
	cwdPath, err := v.DirPath(cwd.(*vfs.Handle))
	if err != nil {
		return nil, err
	}
	rootPath, err := v.DirPath(root.(*vfs.Handle))
	if err != nil {
		return nil, err
	}
	hc, err := host.OpenDir(cwdPath)
	if err != nil {
		return nil, unix.ENOENT // made by the transaction: not on the host
	}
	hr, err := host.OpenDir(rootPath)
	if err != nil {
		hc.Release()
		return nil, unix.ENOENT
	}
	return proc.NewFS(hc, hr, umask), nil
}

// resume serves xresume.
func (p *Programs) resume(c *interpose.Call) error {
	th, b, err := p.bindingOf(c.Tid)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if !b.paused {
		b.mu.Unlock()
		return unix.EINVAL
	}
	prev := th.SetFS(b.aside)
	inTree := b.tx == nil
	if inTree {
		b.aside = nil
	} else {
		b.aside = prev
	}
	b.paused = false
	b.mu.Unlock()
	if inTree {
		p.base.Procs.Drop(prev)
	}
	return nil
}

// exited is told that thread tid has ended (before proc forgets it): a
// thread that began a transaction and exits inside it aborts it; a member
// leaves it.
func (p *Programs) exited(tid int) {
	if p == nil || !p.used.Load() {
		return
	}
	th := p.base.Procs.Thread(tid)
	if th == nil {
		return
	}
	b, _ := th.Binding().(*binding)
	if b == nil {
		return
	}
	b.mu.Lock()
	tx, began, aside := b.tx, b.began, b.aside
	if tx != nil && began {
		tx.goneOnce.Do(func() { close(tx.gone) })
		tx.mu.Lock()
		ended := tx.ended
		tx.ended = true
		tx.mu.Unlock()
		if ended {
			// Its xend is committing it, and puts the binding back.
			b.mu.Unlock()
			return
		}
	}
	b.tx, b.aside = nil, nil
	b.mu.Unlock()
	if tx == nil {
		if aside != nil {
			// Paused in the command tree's transaction.
			p.base.Procs.Drop(aside)
		}
		return
	}
	if !began {
		tx.mu.Lock()
		delete(tx.members, tid)
		tx.mu.Unlock()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.abandon(tx, fmt.Sprintf("thread %d exited inside its transaction", tid))
		if aside != nil {
			p.base.Procs.Drop(aside)
		}
	}()
}

// abandon aborts tx, which no thread will end.
func (p *Programs) abandon(tx *programTx, why string) {
	tx.t.Abort(why)
	tx.router.Abort()
	tx.locks()
	if tx.flags&TxOrdered != 0 {
		p.order.Done(tx.seq)
	}
	p.mu.Lock()
	delete(p.live, tx)
	p.mu.Unlock()
	p.base.Logf("txexec: transaction %d aborted: %s", tx.t.ID, why)
}

// Close aborts what is left once the program has exited, and waits for
// the aborts of transactions whose threads exited inside them.
func (p *Programs) Close() {
	p.wg.Wait()
	p.mu.Lock()
	var left []*programTx
	for tx := range p.live {
		left = append(left, tx)
	}
	p.mu.Unlock()
	for _, tx := range left {
		tx.mu.Lock()
		ended := tx.ended
		tx.ended = true
		tx.mu.Unlock()
		if !ended {
			p.abandon(tx, "the program exited inside it")
		}
	}
}
