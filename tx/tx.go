package tx

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
)

// System-call numbers of txexec's own calls (include/txexec.h).
const (
	sysBase    = 0x0ffe0000
	sysXbegin  = sysBase + 0
	sysXend    = sysBase + 1
	sysXabort  = sysBase + 2
	sysXpause  = sysBase + 3
	sysXresume = sysBase + 4
)

// Flags change how a transaction commits.
type Flags uint

const (
	// Nondurable commits without fsyncs (as txexec --no-durable).
	Nondurable Flags = 1 << 0
	// ErrorUnsupported makes a call without transactional meaning fail
	// with ENOTSUP instead of dooming the transaction.
	ErrorUnsupported Flags = 1 << 1
	// ordered is TX_ORDERED, set by BeginOrdered.
	ordered Flags = 1 << 2
)

var (
	// ErrNotSupervised: the program does not run under txexec (xbegin
	// answered ENOSYS).
	ErrNotSupervised = errors.New("tx: not running under txexec (xbegin: ENOSYS); start the program with txexec --in-program -- PROGRAM")
	// ErrConflict: the transaction lost a conflict; every change was
	// rolled back, and running it again may succeed (xend: EAGAIN).
	ErrConflict = errors.New("tx: transaction lost a conflict and was rolled back")
	// ErrAborted: the transaction was doomed (Abort, or a call without
	// transactional meaning) and rolled back (xend: ECANCELED).
	ErrAborted = errors.New("tx: transaction aborted and rolled back")
	// ErrBusy: a thread or process that joined the transaction still
	// runs; it stays open (xend: EBUSY).
	ErrBusy = errors.New("tx: a thread or process of the transaction still runs")
)

func call(nr, a0, a1 uintptr) (uintptr, error) {
	r, _, e := syscall.Syscall(nr, a0, a1, 0)
	if e != 0 {
		return 0, e
	}
	return r, nil
}

// Begin begins a transaction for the calling goroutine, which stays locked
// to its OS thread until End ends it. It returns the attempt number: 0, or
// how many conflicts the thread's transactions lost in a row. Inside a
// transaction, Begin nests flat.
func Begin(flags Flags) (attempt int, err error) {
	return begin(flags&^ordered, 0)
}

// BeginOrdered is Begin whose commit waits until every smaller seq of the
// same supervisor has committed or been given up (TX_ORDERED). Numbers
// start at 0 and are dense; a retry after ErrConflict keeps its number.
func BeginOrdered(flags Flags, seq uint64) (attempt int, err error) {
	return begin(flags|ordered, uintptr(seq))
}

func begin(flags Flags, seq uintptr) (int, error) {
	// A transaction is the OS thread's. Locking also keeps the runtime
	// from creating threads from this one while it is in the transaction:
	// when the current thread is locked, Go starts new Ms from its
	// template thread instead, and a thread created from this one would
	// join the transaction.
	runtime.LockOSThread()
	r, err := call(sysXbegin, uintptr(flags), seq)
	if err != nil {
		runtime.UnlockOSThread()
		if err == syscall.ENOSYS {
			return 0, ErrNotSupervised
		}
		return 0, fmt.Errorf("tx: xbegin: %w", err)
	}
	return int(r), nil
}

// End commits the transaction (or, nested, ends one flat level). The
// goroutine is unlocked from its thread once the transaction has ended,
// committed or not: ErrConflict and ErrAborted say it was rolled back.
func End() error {
	_, err := call(sysXend, 0, 0)
	switch err {
	case nil:
		runtime.UnlockOSThread()
		return nil
	case syscall.EAGAIN:
		runtime.UnlockOSThread()
		return ErrConflict
	case syscall.ECANCELED:
		runtime.UnlockOSThread()
		return ErrAborted
	case syscall.EBUSY:
		return ErrBusy
	case syscall.ENOSYS:
		return ErrNotSupervised
	case syscall.EIO:
		runtime.UnlockOSThread()
		return fmt.Errorf("tx: xend: the transaction could not commit and was rolled back (see txexec's message): %w", err)
	}
	return fmt.Errorf("tx: xend: %w", err)
}

// Abort dooms the transaction: End then rolls it back and returns
// ErrAborted. Changes made between Abort and End are discarded too.
func Abort() error { return simple(sysXabort, "xabort") }

// Pause makes the goroutine's calls act on the host, outside its
// transaction, until Resume: what it writes meanwhile survives an abort.
func Pause() error { return simple(sysXpause, "xpause") }

// Resume ends a Pause.
func Resume() error { return simple(sysXresume, "xresume") }

func simple(nr uintptr, name string) error {
	_, err := call(nr, 0, 0)
	switch err {
	case nil:
		return nil
	case syscall.ENOSYS:
		return ErrNotSupervised
	}
	return fmt.Errorf("tx: %s: %w", name, err)
}

// DefaultMaxTries is how many times Run runs its function at most.
const DefaultMaxTries = 100

// Run runs fn in a transaction until it commits, at most DefaultMaxTries
// times: it runs it again after a conflict, whose changes were rolled
// back. Memory is not rolled back: fn must start from the state it needs
// each time. When fn returns an error, the transaction is rolled back and
// Run returns that error, unless the transaction had lost a conflict
// already (then fn runs again: the conflict is likely why it failed).
func Run(fn func() error) error { return RunFlags(0, DefaultMaxTries, fn) }

// RunFlags is Run with xbegin's flags and a bound on the runs (0: none).
func RunFlags(flags Flags, maxTries int, fn func() error) error {
	for try := 0; maxTries <= 0 || try < maxTries; try++ {
		if _, err := Begin(flags); err != nil {
			return err
		}
		if err := fn(); err != nil {
			Abort()
			if errors.Is(End(), ErrConflict) {
				// Doomed by a conflict before the function failed:
				// that is likely why it failed (the view answers
				// ESTALE once the transaction has lost).
				continue
			}
			return err
		}
		err := End()
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%w %d times in a row (tx.RunFlags gave up)", ErrConflict, maxTries)
}
