package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The commit lock files in the state directory (flock(2) locks, which the
// kernel drops when their holder dies, so a crash never leaves one held).
const (
	// CommitLockName is held shared by every committer from its commit
	// point until it is written through, and exclusive by a transaction
	// that took the commit lock early (see LockCommits).
	CommitLockName = "commit.lock"
	// GateLockName is the turnstile in front of CommitLockName: flock
	// grants a new shared lock while an exclusive request waits, so a
	// stream of committers could starve the exclusive one; every locker
	// passes through the gate (held exclusive, briefly), and the one
	// waiting for the exclusive lock blocks the others at the gate.
	GateLockName = "gate.lock"
)

// LockMode says how LockCommits takes the commit lock.
type LockMode int

// The ways to take the commit lock.
const (
	// LockShared waits for, and takes, the lock committers share: no
	// exclusive holder can begin until it is released.
	LockShared LockMode = iota
	// LockSharedNoWait is LockShared, except that it fails at once with
	// ErrLockBusy instead of waiting.
	LockSharedNoWait
	// LockExclusive waits until every committer holding the shared lock
	// has released it (has written its transaction through) and keeps
	// every other committer out until released.
	LockExclusive
)

// ErrLockBusy is returned by LockCommits(LockSharedNoWait) when another
// process holds the commit lock exclusively, or is about to.
var ErrLockBusy = errors.New("the commit lock is held")

// LockCommits takes the commit lock of the state directory, across
// processes, and returns the function that releases it. Committers hold
// it shared from before their commit point until their write-through is
// marked applied; a transaction that lost to others repeatedly holds it
// exclusive from before it begins until it has committed or aborted, so
// that nothing can commit meanwhile and it cannot lose again (docs/semantics.md §3).
//
// Lock order: the gate, then the commit lock; the gate is released as soon
// as the commit lock is held. A holder of the exclusive lock must not ask
// for it again, shared or not: flock locks are per open file, so that
// would wait for itself.
func (s *Store) LockCommits(mode LockMode) (release func(), err error) {
	gate, err := s.lockFile(GateLockName, unix.LOCK_EX|nb(mode))
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if mode == LockExclusive {
		how = unix.LOCK_EX
	}
	commit, err := s.lockFile(CommitLockName, how|nb(mode))
	gate.Close() // closing the only descriptor releases the flock
	if err != nil {
		return nil, err
	}
	return func() { commit.Close() }, nil
}

func nb(mode LockMode) int {
	if mode == LockSharedNoWait {
		return unix.LOCK_NB
	}
	return 0
}

// lockFile opens (creating) name in the state directory and flocks it.
func (s *Store) lockFile(name string, how int) (*os.File, error) {
	path := filepath.Join(s.dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock commits: %w", err)
	}
	for err = unix.Flock(int(f.Fd()), how); err == unix.EINTR; {
		err = unix.Flock(int(f.Fd()), how)
	}
	if err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, ErrLockBusy
		}
		return nil, fmt.Errorf("lock commits: %w", &os.PathError{Op: "flock", Path: path, Err: err})
	}
	return f, nil
}
