package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"txexec/internal/cli"
	"txexec/txn"
)

// txexec parallel (docs/semantics.md §11): each command runs as its own
// txexec process (this binary, re-executed with the run's options) whose
// transaction waits at a commit gate (gate.go) until every earlier
// command has settled, through a txn.CommitOrder here. Its commit then
// validates against all of them: one that read what an earlier command
// changed loses the conflict and is run again, now the next to commit.
// Output is held per command and written whole, in input order.

// Outcomes of a command of txexec parallel, in --json and the summary.
const (
	outcomeCommitted = "committed"
	// outcomeFailed: it failed (non-zero status), or its transaction
	// could not commit; it counts as a failure.
	outcomeFailed = "failed"
	// outcomeNotCommitted: it exited 0 but nothing was to be committed
	// (--on-exit=abort).
	outcomeNotCommitted = "not committed"
	// outcomeStopped: killed, or never started, after an earlier
	// command failed (without --keep-going).
	outcomeStopped = "stopped"
)

// runParallelIfAsked runs txexec parallel when args name it: first, or
// after a leading --state-dir DIR as the other subcommands allow.
func runParallelIfAsked(args []string) (status int, ok bool) {
	switch {
	case len(args) > 0 && args[0] == "parallel":
		args = args[1:]
	case len(args) > 2 && args[0] == "--state-dir" && args[2] == "parallel":
		args = append(slices.Clone(args[:2]), args[3:]...)
	case len(args) > 1 && strings.HasPrefix(args[0], "--state-dir=") && args[1] == "parallel":
		args = append(slices.Clone(args[:1]), args[2:]...)
	default:
		return 0, false
	}
	return runParallel(args, os.Stdin, os.Stdout, os.Stderr), true
}

// parallelCmd is one command of the run.
type parallelCmd struct {
	seq  int
	line string   // as shown: the input line, or the words after --
	argv []string // what its txexec runs
	ctx  context.Context
	stop context.CancelFunc

	// Set by its runner before settled is closed.
	outcome string
	status  int
	txIDs   []int64 // every attempt's transaction, in order
	reruns  int
	busy    time.Duration // its final attempt's time, without the wait to commit
	stdout  []byte
	stderr  []byte
	settled chan struct{}
	// wounds counts its attempts stopped for an earlier command's lock
	// wait or lock try (parallel_locks.go), voids those not judged
	// because a lock try of theirs was refused while another command of
	// the run held host locks; reruns counts both.
	wounds, voids int

	// Its current attempt, guarded by parallelRun.mu:
	// passed says it was let through its gate: an interruption lets it
	// finish its commit, an earlier command's lock wait does not stop it.
	passed bool
	// wound stops it (kills its txexec); nil when none runs.
	wound context.CancelFunc
	// wounded says wound was called for the lock wait of command
	// woundedBy, by a wait (or, if woundedByTry, a refused try).
	wounded      bool
	woundedBy    int
	woundedByTry bool
	// holdsLocks says its transaction lockTx took a host lock
	// (gateLocked).
	holdsLocks bool
	lockTx     int64
	// lockWaits counts its requests waiting for host locks (gateLockWait
	// less gateLockWaited).
	lockWaits int
	// attemptEpoch is parallelRun.lockEpoch when the attempt began;
	// heldEnded, when the last attempt of it that held host locks ended.
	attemptEpoch, heldEnded uint64
	// tried says a lock try of the attempt was refused (gateLockBusy);
	// void, that the attempt is not judged for it: it is stopped at its
	// gate and run again once the earlier commands have settled and the
	// attempts in voidWaits (those it may have met) have ended.
	tried     bool
	void      bool
	voidWaits []<-chan struct{}
	// ended is closed when the attempt's txexec has exited.
	ended chan struct{}
}

// parallelRun is one txexec parallel.
type parallelRun struct {
	opts      *cli.Run
	exe       string
	childArgs []string
	env       []string
	id        int64 // the run in the store (txexec log --run)
	retry     int
	keepGoing bool
	cmds      []*parallelCmd
	order     txn.CommitOrder

	mu sync.Mutex
	// running, atGate and done count commands; guarded by mu.
	running, atGate, done int
	// interrupted is the signal that stopped the run, nil if none;
	// guarded by mu.
	interrupted os.Signal
	// lockEpoch counts the beginnings of attempts and the ends of those
	// that held host locks (parallel_locks.go); guarded by mu.
	lockEpoch uint64
}

// runParallel is txexec parallel ARGS, reading commands from stdin when
// none follow --.
func runParallel(args []string, stdin io.Reader, stdout, stderr *os.File) int {
	p, err := cli.ParseParallel(args)
	if err != nil {
		fmt.Fprintf(stderr, "txexec: %v\n", err)
		return exitUsage
	}
	o := p.Run
	if o.Help {
		fmt.Fprint(stdout, cli.Usage())
		return 0
	}
	if o.Version {
		fmt.Fprintf(stdout, "txexec %s\n", versionString())
		return 0
	}
	for _, x := range o.Excludes {
		if err := checkExclude(x); err != nil {
			fmt.Fprintf(stderr, "txexec: %v\n", err)
			return exitUsage
		}
	}
	cmds, err := parallelCommands(p, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "txexec: parallel: %v\n", err)
		return exitUsage
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "txexec: parallel: find txexec itself: %v\n", err)
		return exitInternal
	}
	st, err := openStore(o)
	if err != nil {
		fmt.Fprintf(stderr, "txexec: %v\n", err)
		return exitInternal
	}
	id, err := st.BeginRun(len(cmds))
	st.Close()
	if err != nil {
		fmt.Fprintf(stderr, "txexec: %v\n", err)
		return exitInternal
	}
	jobs := o.Jobs
	if jobs == 0 {
		jobs = runtime.NumCPU()
	}
	r := &parallelRun{opts: o, exe: exe, childArgs: p.ChildArgs, env: os.Environ(), id: id, retry: o.Retry,
		keepGoing: o.KeepGoing, cmds: cmds}
	if o.StateDir == "" {
		// Every command's txexec uses the state directory this one
		// recorded the run in, whatever the environment says.
		r.childArgs = append(slices.Clone(r.childArgs), "--state-dir="+stateDirOf(o))
	}
	return r.run(jobs, o.JSON, stdout, stderr)
}

// parallelCommands are the commands of the command line, or else the
// non-blank lines of stdin, each run by sh -c.
func parallelCommands(p *cli.Parallel, stdin io.Reader) ([]*parallelCmd, error) {
	var cmds []*parallelCmd
	add := func(line string, argv []string) {
		ctx, stop := context.WithCancel(context.Background())
		cmds = append(cmds, &parallelCmd{seq: len(cmds), line: line, argv: argv, ctx: ctx, stop: stop,
			settled: make(chan struct{})})
	}
	if p.Commands != nil {
		for _, argv := range p.Commands {
			add(shellQuote(argv), argv)
		}
		return cmds, nil
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.TrimSpace(line) != "" {
			add(line, []string{"sh", "-c", line})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read commands from standard input: %w", err)
	}
	return cmds, nil
}

// run runs the commands, at most jobs at once, and writes their output
// (or --json) in input order and the summary; it returns the exit status.
func (r *parallelRun) run(jobs int, asJSON bool, stdout, stderr *os.File) int {
	start := time.Now()
	var termMu sync.Mutex // progress line against output
	progress := !asJSON && isTerminal(stderr)
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		if !progress {
			return
		}
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopProgress:
				termMu.Lock()
				fmt.Fprint(stderr, "\r\033[K")
				termMu.Unlock()
				return
			case <-tick.C:
				termMu.Lock()
				fmt.Fprintf(stderr, "\r\033[K%s", r.progressLine())
				termMu.Unlock()
			}
		}
	}()

	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for _, c := range r.cmds {
			<-c.settled
			termMu.Lock()
			if progress {
				fmt.Fprint(stderr, "\r\033[K")
			}
			r.deliver(c, asJSON, stdout, stderr)
			termMu.Unlock()
		}
	}()

	// SIGINT, SIGTERM and SIGHUP stop the run as a failure does, every
	// command not let through its gate yet included; the one committing
	// finishes. (From a terminal the commands get SIGINT too.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for sig := range sigs {
			r.interrupt(sig)
		}
	}()

	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for _, c := range r.cmds {
		select {
		case sem <- struct{}{}:
			if c.ctx.Err() != nil {
				<-sem
				r.settle(c, outcomeStopped, 0)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r.runCmd(c)
			}()
		case <-c.ctx.Done():
			// Never started: an earlier command failed.
			r.settle(c, outcomeStopped, 0)
		}
	}
	wg.Wait()
	<-printed
	close(stopProgress)
	<-progressDone

	sum := r.summarize(time.Since(start))
	if sum.Stopped > 0 || sum.Wounded > 0 {
		// The commands killed before their commit left transactions
		// whose supervisor died: record them aborted now, as the next
		// txexec would.
		if st, err := openStore(r.opts); err == nil {
			st.Close()
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.Encode(struct {
			Summary parallelSummary `json:"summary"`
		}{sum})
	} else {
		fmt.Fprintf(stderr, "txexec: parallel: %s\n", sum.line(r))
	}
	return sum.Status
}

// interrupt stops the run for sig: every command not let through its
// gate is stopped, and none starts any more.
func (r *parallelRun) interrupt(sig os.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.interrupted == nil {
		r.interrupted = sig
	}
	for _, c := range r.cmds {
		if !c.passed {
			c.stop()
		}
	}
}

func (r *parallelRun) isInterrupted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.interrupted != nil
}

// runCmd runs c until it settles: committed, failed, or stopped. A
// conflict reruns it once every earlier command has settled; a rerun of
// an attempt that began after they had (so it lost to a process outside
// the run) counts against --retry.
func (r *parallelRun) runCmd(c *parallelCmd) {
	outsideReruns := 0
	for {
		if r.isInterrupted() {
			r.settle(c, outcomeStopped, 0)
			return
		}
		// An attempt that begins once every earlier command has
		// settled can lose only to processes outside the run.
		afterEarlier := r.order.Next() >= uint64(c.seq)
		a := r.attempt(c)
		c.txIDs = append(c.txIDs, a.txIDs...)
		if (c.ctx.Err() != nil || r.isInterrupted()) && !a.committed {
			r.settle(c, outcomeStopped, 0)
			return
		}
		if a.wounded || a.void {
			// Stopped for an earlier command's lock wait or try, or not
			// judged for a try of its own that met another command's
			// lock (never let through its gate): run again once the
			// earlier ones have settled, when none can wait for it or
			// hold its lock any more, and the later ones it met have
			// let go of theirs.
			c.reruns++
			if a.wounded {
				c.wounds++
			} else {
				c.voids++
			}
			if r.order.Wait(c.ctx, uint64(c.seq)) != nil || waitAll(c.ctx, a.voidWaits) != nil {
				r.settle(c, outcomeStopped, 0)
				return
			}
			continue
		}
		if a.conflict && (!afterEarlier || outsideReruns < r.retry) {
			if afterEarlier {
				outsideReruns++
			}
			c.reruns++
			if r.order.Wait(c.ctx, uint64(c.seq)) != nil {
				r.settle(c, outcomeStopped, 0)
				return
			}
			continue
		}
		c.stdout, c.stderr, c.busy = a.stdout, a.stderr, a.busy
		switch {
		case a.committed:
			r.settle(c, outcomeCommitted, a.status)
		case a.status == 0:
			r.settle(c, outcomeNotCommitted, 0)
		default:
			r.settle(c, outcomeFailed, a.status)
		}
		return
	}
}

// settle records c's outcome and lets the next command commit. A failure
// without --keep-going first stops every later command, so that none of
// them passes its gate.
func (r *parallelRun) settle(c *parallelCmd, outcome string, status int) {
	c.outcome, c.status = outcome, status
	if outcome == outcomeFailed && !r.keepGoing {
		for _, later := range r.cmds[c.seq+1:] {
			later.stop()
		}
	}
	r.mu.Lock()
	r.done++
	r.mu.Unlock()
	r.order.Done(uint64(c.seq))
	close(c.settled)
}

// attemptResult is one run of a command's txexec.
type attemptResult struct {
	status              int
	committed, conflict bool // as its gate reported
	txIDs               []int64
	stdout, stderr      []byte
	busy                time.Duration
	// wounded: stopped for an earlier command's lock wait or try.
	wounded bool
	// void: not judged for a refused lock try (parallel_locks.go); run
	// again once the attempts of voidWaits have ended too.
	void      bool
	voidWaits []<-chan struct{}
}

// attempt runs c's txexec once, answering its gate in order.
func (r *parallelRun) attempt(c *parallelCmd) attemptResult {
	var res attemptResult
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		res.status, res.stderr = exitInternal, fmt.Appendf(nil, "txexec: parallel: commit gate: %v\n", err)
		return res
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "commit gate"), os.NewFile(uintptr(fds[1]), "commit gate")
	defer ours.Close()
	// Ended by c's stop, or by an earlier command's lock wait.
	ctx, wound := context.WithCancel(c.ctx)
	defer wound()
	cmd := exec.CommandContext(ctx, r.exe, append(append(slices.Clone(r.childArgs), "--"), c.argv...)...)
	cmd.Env = append(slices.Clone(r.env), fmt.Sprintf("%s=3 %d %d", parallelEnv, r.id, c.seq))
	cmd.ExtraFiles = []*os.File{theirs} // its descriptor 3
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// Killing this txexec kills every command's: each dies before its
	// commit, or is finished by recovery if it was past it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		res.status, res.stderr = exitInternal, fmt.Appendf(nil, "txexec: parallel: start %s: %v\n", r.exe, err)
		return res
	}
	ended := make(chan struct{})
	r.mu.Lock()
	r.running++
	c.passed, c.wound, c.wounded, c.holdsLocks, c.lockTx, c.lockWaits = false, wound, false, false, 0, 0
	r.lockEpoch++
	c.attemptEpoch, c.tried, c.void, c.voidWaits, c.ended = r.lockEpoch, false, false, nil, ended
	r.mu.Unlock()
	var voidTx int64 // its transaction, stopped at its gate for being void
	var gateWait time.Duration
	gateDone := make(chan struct{})
	go func() {
		defer close(gateDone)
		// Once the driver stops reading, the gate is closed: a txexec
		// waiting at it reads its end and aborts, one still saying its
		// locks is not blocked by a full socket. (Left open until the
		// txexec exited, the gate of an attempt that the interruption
		// turned away below kept both sides waiting for each other.)
		defer ours.Close()
		rd := bufio.NewReader(ours)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			switch word, id := parseGateLine(line); word {
			case gateReady:
				if len(res.txIDs) == 0 || res.txIDs[len(res.txIDs)-1] != id { // not said at gateLocked
					res.txIDs = append(res.txIDs, id)
				}
				if r.stopVoid(c, wound, id, &voidTx) {
					return
				}
				r.count(&r.atGate, 1)
				t0 := time.Now()
				err := r.order.Wait(ctx, uint64(c.seq))
				gateWait += time.Since(t0)
				r.count(&r.atGate, -1)
				if err != nil {
					return // stopped or wounded: killed by its context
				}
				r.mu.Lock()
				if r.interrupted != nil {
					// Its txexec reads the end of the gate and aborts.
					r.mu.Unlock()
					return
				}
				if c.void {
					// Made void while it waited: never let through.
					voidTx = id
					wound()
					r.mu.Unlock()
					return
				}
				c.passed = true
				r.mu.Unlock()
				fmt.Fprintln(ours, gateGo)
			case gateCommitted:
				res.committed = true
			case gateConflict:
				res.conflict = true
			case gateLocked:
				res.txIDs = append(res.txIDs, id)
				r.heldLocks(c, id)
			case gateLockWait:
				r.lockWaitBegan(c)
			case gateLockWaited:
				r.lockWaitEnded(c)
			case gateLockBusy:
				r.lockTryRefused(c)
			}
		}
	}()
	err = cmd.Wait()
	// Its end of the gate is closed with it; its tree never had it.
	<-gateDone
	r.mu.Lock()
	r.running--
	// Not committing any more: an interruption before the next attempt
	// resets it must stop that one too.
	c.passed = false
	// Its locks went with its txexec.
	res.wounded = c.wounded && !res.committed
	res.void, res.voidWaits = c.void && !res.committed, c.voidWaits
	lockTx, by, byTry := c.lockTx, c.woundedBy, c.woundedByTry
	if c.holdsLocks {
		r.lockEpoch++
		c.heldEnded = r.lockEpoch
	}
	c.wound, c.holdsLocks, c.lockWaits, c.tried, c.voidWaits = nil, false, 0, false, nil
	r.mu.Unlock()
	switch {
	case res.wounded && lockTx != 0:
		r.recordStopped(lockTx, woundedWhy(c, by, byTry))
	case res.void && voidTx != 0:
		r.recordStopped(voidTx, voidWhy(c))
	}
	// After the record: the command waiting for it to end starts a
	// txexec, whose recovery would record its own reason.
	close(ended)
	res.busy = time.Since(start) - gateWait
	res.stdout, res.stderr = out.Bytes(), errb.Bytes()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.status = exitStatusOf(ee.ProcessState)
	default:
		res.status = exitInternal
		res.stderr = fmt.Appendf(res.stderr, "txexec: parallel: %v\n", err)
	}
	return res
}

// exitStatusOf is a shell's $? for a finished process.
func exitStatusOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func (r *parallelRun) count(n *int, delta int) {
	r.mu.Lock()
	*n += delta
	r.mu.Unlock()
}

// progressLine is the progress shown on a terminal.
func (r *parallelRun) progressLine() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	reruns := 0
	for _, c := range r.cmds {
		select {
		case <-c.settled:
			reruns += c.reruns
		default:
		}
	}
	queued := len(r.cmds) - r.done - r.running
	if queued < 0 {
		queued = 0
	}
	return fmt.Sprintf("txexec parallel: %d/%d done, %d running (%d waiting to commit), %d queued, %d re-runs",
		r.done, len(r.cmds), r.running, r.atGate, queued, reruns)
}

// parallelJSON is one command in txexec parallel --json. The field names
// are an interface: add fields, never rename or remove one.
type parallelJSON struct {
	Seq          int     `json:"seq"`
	Command      string  `json:"command"`
	Outcome      string  `json:"outcome"`
	Status       int     `json:"status"`
	Transactions []int64 `json:"transactions"`
	Reruns       int     `json:"reruns"`
	Seconds      float64 `json:"seconds"`
	Stdout       string  `json:"stdout"`
	Stderr       string  `json:"stderr"`
}

// deliver writes what c produced: its output whole, or its JSON object.
// A stopped command's output is dropped: it never ran to the end.
func (r *parallelRun) deliver(c *parallelCmd, asJSON bool, stdout, stderr io.Writer) {
	if asJSON {
		ids := c.txIDs
		if ids == nil {
			ids = []int64{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.Encode(parallelJSON{Seq: c.seq, Command: c.line, Outcome: c.outcome, Status: c.status,
			Transactions: ids, Reruns: c.reruns, Seconds: c.busy.Seconds(),
			Stdout: string(c.stdout), Stderr: string(c.stderr)})
		return
	}
	stdout.Write(c.stdout)
	stderr.Write(c.stderr)
}

// parallelSummary is the end of a run, in --json and on one line.
type parallelSummary struct {
	Run       int64 `json:"run"`
	Commands  int   `json:"commands"`
	Committed int   `json:"committed"`
	Failed    int   `json:"failed"`
	Stopped   int   `json:"stopped"`
	Rerun     int   `json:"rerun"`  // commands run again after a conflict or a lock wait or try
	Reruns    int   `json:"reruns"` // attempts that followed a conflict or a lock wait or try
	// Wounded counts the attempts stopped for an earlier command's lock
	// wait or try (each followed by a re-run).
	Wounded int `json:"wounded"`
	// LockTries counts the attempts not judged because a lock try of
	// theirs was refused while another command of the run held host
	// locks (each followed by a re-run).
	LockTries int     `json:"lock_tries"`
	Wall      float64 `json:"wall_seconds"`
	Busy      float64 `json:"busy_seconds"` // the sum of the commands' times
	Speedup   float64 `json:"speedup"`
	Status    int     `json:"status"`
	// FirstFailed is the place of the first failed command; -1 if none.
	FirstFailed int `json:"first_failed"`
	// Interrupted names the signal that stopped the run; "" if none.
	Interrupted string `json:"interrupted,omitempty"`
}

func (r *parallelRun) summarize(wall time.Duration) parallelSummary {
	s := parallelSummary{Run: r.id, Commands: len(r.cmds), Wall: wall.Seconds(), FirstFailed: -1}
	for _, c := range r.cmds {
		switch c.outcome {
		case outcomeCommitted:
			s.Committed++
		case outcomeFailed:
			s.Failed++
			if s.FirstFailed < 0 {
				s.FirstFailed, s.Status = c.seq, c.status
			}
		case outcomeStopped:
			s.Stopped++
		}
		if c.reruns > 0 {
			s.Rerun++
			s.Reruns += c.reruns
		}
		s.Wounded += c.wounds
		s.LockTries += c.voids
		s.Busy += c.busy.Seconds()
	}
	if s.Wall > 0 {
		s.Speedup = s.Busy / s.Wall
	}
	r.mu.Lock()
	if sig, ok := r.interrupted.(unix.Signal); ok {
		s.Interrupted = unix.SignalName(sig)
		if s.FirstFailed < 0 {
			s.Status = 128 + int(sig)
		}
	}
	r.mu.Unlock()
	return s
}

// line is the summary on stderr.
func (s parallelSummary) line(r *parallelRun) string {
	l := fmt.Sprintf("%d commands, %d committed, %d re-run after conflicts, wall time %.2fs, speed-up %.2fx over the sum of the commands' times (%.2fs); txexec log --run %d",
		s.Commands, s.Committed, s.Rerun, s.Wall, s.Speedup, s.Busy, s.Run)
	if s.FirstFailed >= 0 {
		c := r.cmds[s.FirstFailed]
		l += fmt.Sprintf("; %d failed, the first with status %d: %s", s.Failed, c.status, c.line)
	}
	if s.Wounded > 0 {
		l += fmt.Sprintf("; %d attempts stopped for an earlier command's lock wait or try", s.Wounded)
	}
	if s.LockTries > 0 {
		l += fmt.Sprintf("; %d attempts run again after a lock try met another command's lock", s.LockTries)
	}
	if s.Stopped > 0 {
		l += fmt.Sprintf("; %d stopped", s.Stopped)
	}
	if s.Interrupted != "" {
		l += "; interrupted by " + s.Interrupted
	}
	return l
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
