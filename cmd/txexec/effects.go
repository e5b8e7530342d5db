package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"txexec/internal/cli"
	"txexec/interpose"
	"txexec/signals"
	"txexec/syscalls"
	"txexec/txn"
)

// runEffects is what one run of the command holds besides its files until
// the outcome is known (docs/semantics.md §4): the processes still running after
// the command exited, the signals sent out of the transaction, and the
// output under --output=defer.
type runEffects struct {
	// txID names the transaction in messages (0: --passthrough).
	txID int64
	// policy is --signals.
	policy signals.Policy
	// output is nil under --output=live.
	output *deferredOutput
	// router is nil under --passthrough.
	router *signals.Router
	// abortCertain reports, once the command has exited with status, that
	// the transaction will abort whatever the rest of the tree does.
	abortCertain func(status int) bool

	// fast is the fast path's configuration (on by default), nil when
	// it is off (--no-fast-lookups, or an option that excludes it).
	fast *interpose.FastLookups

	// ready is closed once sess is set: the command may exit before
	// interpose.Start has returned.
	ready chan struct{}

	mu sync.Mutex
	// sess, cmdExited and cmdStatus are guarded by mu.
	sess      *interpose.Session
	cmdExited bool
	cmdStatus int
}

// newAttempt prepares the effects of one run under the options.
func newAttempt(o *cli.Run, txID int64) (*runEffects, error) {
	a := &runEffects{txID: txID, policy: o.Signals, abortCertain: func(int) bool { return false }, ready: make(chan struct{})}
	if o.Output == cli.OutputDefer {
		out, err := newDeferredOutput("")
		if err != nil {
			return nil, err
		}
		a.output = out
	}
	return a, nil
}

// abortCertainFor is runEffects.abortCertain under the options
// (txn.AbortCertain): a kept transaction is never killed.
func abortCertainFor(o *cli.Run, doomed func() error) func(status int) bool {
	return func(status int) bool { return txn.AbortCertain(o.OnExit, status, doomed() != nil) }
}

// attach wires the run's effects into k (the signal router of a transaction) and
// into the session's configuration.
func (a *runEffects) attach(k *syscalls.Kernel, cfg *interpose.Config) {
	if a.txID != 0 {
		procs := k.Procs
		a.router = signals.NewRouter(a.policy, signals.ProcTasks{},
			func(id int) bool { return procs.Thread(id) != nil || procs.Process(id) != nil },
			os.Getpid(), k.Logf)
		k.Signals = a.router
	}
	if a.output != nil {
		cfg.Files = a.output.Files()
	}
	cfg.OnCommandExit = func(ws unix.WaitStatus, live []int) { a.commandExited(k, ws, live) }
	if doom := k.OnInternalError; doom != nil {
		k.OnInternalError = func(err error) {
			doom(err)
			a.killIfEnded()
		}
	}
}

// started records the running session.
func (a *runEffects) started(sess *interpose.Session) {
	a.mu.Lock()
	a.sess = sess
	a.mu.Unlock()
	close(a.ready)
	if a.output != nil {
		a.output.Started()
	}
}

// commandExited runs on the tracer's thread when the command has exited
// while other processes of the tree still run: if the transaction is bound
// to abort, they are killed now; otherwise txexec says whom it waits for.
func (a *runEffects) commandExited(k *syscalls.Kernel, ws unix.WaitStatus, live []int) {
	status := interpose.ExitStatus(ws)
	<-a.ready
	a.mu.Lock()
	a.cmdExited, a.cmdStatus = true, status
	sess := a.sess
	a.mu.Unlock()
	if a.abortCertain(status) {
		if sess != nil {
			sess.Kill()
		}
		return
	}
	seen := map[int]bool{}
	var pids []int
	for _, tid := range live {
		pid := tid
		if th := k.Procs.Thread(tid); th != nil {
			pid = th.Proc.Tgid
		}
		if !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	words := make([]string, len(pids))
	for i, p := range pids {
		words[i] = strconv.Itoa(p)
	}
	who := "txexec:"
	if a.txID != 0 {
		who = fmt.Sprintf("txexec: transaction %d", a.txID)
	}
	fmt.Fprintf(os.Stderr, "%s waits for pids %s (still running after the command exited)\n", who, strings.Join(words, " "))
}

// killIfEnded kills what is left of the tree when the command has already
// exited and the transaction has just become bound to abort (doomed).
func (a *runEffects) killIfEnded() {
	a.mu.Lock()
	ended, status, sess := a.cmdExited, a.cmdStatus, a.sess
	a.mu.Unlock()
	if ended && sess != nil && a.abortCertain(status) {
		sess.Kill()
	}
}

// finished is called once the whole tree has exited.
func (a *runEffects) finished() {
	if a.output != nil {
		if err := a.output.Finish(); err != nil {
			fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		}
	}
}

// committed releases what was held: signals first (after write-through, as
// the transaction's last effect on other processes), then the output, then
// the signals the command sent txexec itself.
func (a *runEffects) committed() {
	release := func() {
		if a.output != nil {
			if err := a.output.Release(); err != nil {
				fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
			}
		}
	}
	if a.router == nil {
		release()
		return
	}
	a.router.Commit(release)
}

// dropped discards what was held, saying how much, for a transaction that
// ended as outcome ("aborted", or "kept": a kept transaction holds neither
// output nor signals across txexec processes).
func (a *runEffects) dropped(outcome string) {
	if a.router != nil {
		if n := a.router.Abort(); n > 0 {
			fmt.Fprintf(os.Stderr, "txexec: dropped %d %s sent out of %s transaction %d\n", n, plural(n, "signal"), outcome, a.txID)
		}
	}
	if a.output != nil {
		if n := a.output.Drop(); n > 0 {
			fmt.Fprintf(os.Stderr, "txexec: dropped %d bytes of output of %s transaction %d\n", n, outcome, a.txID)
		}
	}
}

// discard frees what is held without a message (txexec's own errors).
func (a *runEffects) discard() {
	if a.router != nil {
		a.router.Abort()
	}
	if a.output != nil {
		a.output.Drop()
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
