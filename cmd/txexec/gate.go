package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"txexec/txn"
)

// parallelEnv tells the txexec of one command of txexec parallel, in its
// environment, "FD RUN SEQ": the descriptor of its commit gate, the run's
// id and the command's place in it (from 0). It is removed from the
// environment before the command runs.
const parallelEnv = "_TXEXEC_PARALLEL"

// The gate's messages, one line each. The command's txexec says
// gateReady (with its transaction's id) when its transaction is prepared
// to commit, or about to abort, and waits for gateGo, which the driver
// sends once every earlier command has settled; it then reports its
// outcome when it is one the driver cannot tell by its exit status.
//
// While the command runs, its txexec also says gateLocked (with its
// transaction's id) when its transaction first holds a lock on a host
// file, and gateLockWait when a
// request of it has waited syscalls.LockWaitReported for a host lock,
// then gateLockWaited when that wait ends, and gateLockBusy when a request
// that does not wait was refused a host lock held by another: the driver
// stops the later commands that may hold the lock (parallel_locks.go).
const (
	gateReady      = "ready"
	gateGo         = "go"
	gateCommitted  = "committed"
	gateConflict   = "conflict"
	gateLocked     = "locked"
	gateLockWait   = "lockwait"
	gateLockWaited = "lockwaited"
	gateLockBusy   = "lockbusy"
)

// commitGate is the command's side of txexec parallel's ordered commit:
// a stream socket to the driver (see parallel.go).
type commitGate struct {
	f   *os.File
	r   *bufio.Reader
	run int64
	seq int
	// mu keeps the lines whole: the handlers say gateLock* while the
	// command's processes run, txexec says the rest.
	mu sync.Mutex
}

// gateFromEnv is the gate parallelEnv names, or nil without one. The
// descriptor is made close-on-exec at once: the command must not inherit
// it (interpose.InheritedFDs passes on the others).
func gateFromEnv() (*commitGate, error) {
	v, ok := os.LookupEnv(parallelEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(parallelEnv)
	var fd, seq int
	var run int64
	if _, err := fmt.Sscanf(v, "%d %d %d", &fd, &run, &seq); err != nil || fd < 3 || run <= 0 || seq < 0 {
		return nil, fmt.Errorf("%s=%q: expected FD RUN SEQ", parallelEnv, v)
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "commit gate")
	return &commitGate{f: f, r: bufio.NewReader(f), run: run, seq: seq}, nil
}

// wait says the transaction id is ready and returns when the driver lets
// it go on: every earlier command has settled. An error (the driver died
// or stopped this command) aborts it.
func (g *commitGate) wait(id int64) error {
	if err := g.say(fmt.Sprintf("%s %d", gateReady, id)); err != nil {
		return fmt.Errorf("txexec parallel is gone: %w", err)
	}
	line, err := g.r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != gateGo {
		return errors.New("txexec parallel stopped this command")
	}
	return nil
}

// report tells the driver the outcome (gateCommitted, gateConflict).
// Best effort: a driver that is gone does not need it.
func (g *commitGate) report(outcome string) {
	g.say(outcome)
}

// say writes line to the driver.
func (g *commitGate) say(line string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := fmt.Fprintln(g.f, line)
	return err
}

// lockWatch is transaction id's syscalls.HostLockWatch, which tells the
// driver through the gate.
func (g *commitGate) lockWatch(id int64) *gateLockWatch {
	return &gateLockWatch{g: g, id: id}
}

// gateLockWatch says a transaction's host locks and lock waits at its
// gate. Best effort, as the outcome: a driver that is gone does not need
// them.
type gateLockWatch struct {
	g  *commitGate
	id int64
	// held says gateLocked was said: the first host lock is news, the
	// others are not.
	held atomic.Bool
}

// Held implements syscalls.HostLockWatch.
func (w *gateLockWatch) Held() {
	if !w.held.Swap(true) {
		w.g.say(fmt.Sprintf("%s %d", gateLocked, w.id))
	}
}

// Waiting implements syscalls.HostLockWatch.
func (w *gateLockWatch) Waiting() { w.g.say(gateLockWait) }

// Waited implements syscalls.HostLockWatch.
func (w *gateLockWatch) Waited() { w.g.say(gateLockWaited) }

// Busy implements syscalls.HostLockWatch.
func (w *gateLockWatch) Busy() { w.g.say(gateLockBusy) }

// parseGateLine splits a gate message into its word and transaction id.
func parseGateLine(line string) (word string, id int64) {
	word, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	id, _ = strconv.ParseInt(arg, 10, 64)
	return word, id
}

// staleAtGate waits at the gate with transaction t, whose command failed,
// and then says whether what it read has changed since it began
// (txn.Transaction.Stale): under ordered commit its failure stands only
// if it would have failed on the state every earlier command left. A
// gate that fails (the driver is gone) or a check that cannot be made
// leave the failure as it is.
func staleAtGate(g *commitGate, t *txn.Transaction) error {
	id := t.ID
	if g.wait(id) != nil {
		return nil
	}
	conflict, err := t.Stale()
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: transaction %d: cannot tell whether it failed on a state since changed: %v\n", id, err)
		return nil
	}
	return conflict
}
