package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"txexec/fastlookup"
	"txexec/hostlock"
	"txexec/internal/cli"
	"txexec/interpose"
	"txexec/proc"
	"txexec/store"
	"txexec/syscalls"
	"txexec/txn"
	"txexec/vfs"
)

// Exit statuses of txexec itself (docs/semantics.md §1, "Outcome and exit
// status"); those of a transaction that could not commit are txn's.
const (
	exitUsage    = 2
	exitNotFound = 127
	exitConflict = txn.ExitConflict
	exitInternal = txn.ExitInternal
)

// version is txexec's version, set at link time by make build
// (-ldflags "-X main.version=..." from git describe); see versionString.
var version string

// changesFile is where a child run writes its changes ($_TXEXEC_CHANGES_FILE).
var changesFile string

func main() {
	interpose.RunStubIfRequested()
	changesFile = os.Getenv(changesEnv)
	os.Unsetenv(changesEnv)
	if err := enterReplayRootIfAsked(); err != nil {
		fmt.Fprintf(os.Stderr, "txexec: replay: %v\n", err)
		os.Exit(exitInternal)
	}
	if os.Getenv("GOGC") == "" {
		// The supervisor's heap is mostly the view's nodes and read set,
		// which live until the commit: collecting at 1.5× the live heap
		// instead of 2× keeps its peak RSS a fifth lower (dpkg -i: 53
		// MiB, was 66) at no measurable cost in time (docs/performance.md);
		// a small heap is not collected below heapGoalFloor (gc.go).
		setGC()
	}
	go batchRuntimeMonitor()
	os.Exit(run(os.Args[1:]))
}

// programsMaxWorkers bounds the notification workers of a supervisor that
// serves in-program transactions (interpose.DefaultMaxWorkers otherwise):
// workers are started only while all are busy.
const programsMaxWorkers = 1024

func run(args []string) int {
	if len(args) > 0 && args[0] == "help" {
		fmt.Print(cli.Usage())
		return 0
	}
	if len(args) > 0 && wrapSubcommands[args[0]] {
		return cmdWrap(args[0], args[1:], os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == wrappedRunWord {
		return runWrapped(args[1:])
	}
	if status, ok := runParallelIfAsked(args); ok {
		return status
	}
	if status, ok := runSubcommand(args); ok {
		return status
	}
	// A command of txexec parallel: its txexec commits in order.
	gate, err := gateFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitInternal
	}
	o, err := parseRun(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitUsage
	}
	switch {
	case o.Help:
		fmt.Print(cli.Usage())
		return 0
	case o.Version:
		fmt.Printf("txexec %s\n", versionString())
		return 0
	case o.Deterministic && !interpose.HasEffectiveCap(unix.CAP_SYS_ADMIN):
		fmt.Fprintln(os.Stderr, "txexec: --deterministic runs the command in a pid namespace of its own, which needs CAP_SYS_ADMIN: run txexec as root")
		return exitUsage
	case o.Repeat > 0:
		return repeatRuns(o)
	case o.Record:
		return recordRun(o)
	}
	path, err := lookCommand(o.Argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitNotFound
	}
	return runAndReport(o, command{path: path, env: os.Environ(), gate: gate})
}

// command is what a run executes beyond its argv: the program's path, its
// environment and, for a wrapped set-ID program, its credentials.
type command struct {
	path string
	env  []string
	cred *interpose.Cred // nil: txexec's own
	// program, if set, is the file path names, opened by txexec: the
	// command is executed through it (interpose.Config.Program).
	program *os.File
	// gate is the commit gate of a command of txexec parallel, nil
	// otherwise.
	gate *commitGate
}

// runAndReport runs the command and returns txexec's exit status.
func runAndReport(o *cli.Run, cmd command) int {
	hooks := startBenchHooks() // TXEXEC_STATS, TXEXEC_CPUPROFILE (benchhooks.go)
	defer hooks.finish()
	status, err := runCommand(o, cmd, hooks)
	if err != nil {
		var nf *notFoundError
		if errors.As(err, &nf) {
			fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
			return exitNotFound
		}
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitInternal
	}
	return status
}

type notFoundError struct {
	name string
	err  error
}

func (e *notFoundError) Error() string { return fmt.Sprintf("%s: %v", e.name, e.err) }

// lookCommand finds COMMAND as execvp would, without running it.
func lookCommand(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil && !errors.Is(err, exec.ErrDot) {
		if strings.Contains(name, "/") {
			return "", &notFoundError{name, unwrapPathErr(err)}
		}
		return "", &notFoundError{name, errors.New("command not found")}
	}
	if errors.Is(err, exec.ErrDot) {
		err = nil
	}
	return p, err
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// commandFDs are the descriptors the command inherits from txexec.
func commandFDs() []int {
	fds := []int{0, 1, 2}
	for _, fd := range interpose.InheritedFDs() {
		if fd != ^uintptr(0) {
			fds = append(fds, int(fd))
		}
	}
	return fds
}

// runCommand runs the command tree and returns txexec's exit status;
// hooks measure its staging area before it commits or aborts.
func runCommand(o *cli.Run, cmd command, hooks *benchHooks) (int, error) {
	gate := cmd.gate
	host, err := vfs.NewHost()
	if err != nil {
		return 0, err
	}
	entries := syscalls.AllEntries()
	if o.Deterministic {
		// Only now are the time and random calls trapped: without the
		// option they cost nothing (docs/semantics.md §10).
		entries = syscalls.WithDeterminism(entries)
	}
	table, err := syscalls.NewTable(entries)
	if err != nil {
		return 0, err
	}
	// linksIn is where the kernel's names for executed programs go
	// (syscalls.ExecLinks).
	newKernel := func(view vfs.View, linksIn string) (*syscalls.Kernel, func(), error) {
		k := &syscalls.Kernel{
			Table:       table,
			Procs:       proc.NewTable(),
			View:        view,
			Unsupported: o.Unsupported,
			Logf:        func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
		}
		// Without it (no writable TMPDIR for --passthrough, say) only
		// the names of processes started through a symlink differ. It is
		// made at the first exec that needs it; whether it can be is
		// checked now, so that the warning comes before the command runs.
		links := syscalls.LazyExecLinks(linksIn)
		if err := unix.Access(linksIn, unix.W_OK|unix.X_OK); err != nil {
			fmt.Fprintf(os.Stderr, "txexec: warning: cannot make the directory of program names (%s: %v): a program started through a symlink is named after the file it leads to\n", linksIn, err)
			links = nil
		} else {
			k.ExecLinks = links
		}
		done := func() {
			if links != nil {
				links.Close()
			}
		}
		if o.Trace {
			var w io.Writer = os.Stderr
			if o.TraceFile != "" {
				f, err := os.OpenFile(o.TraceFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					done()
					return nil, nil, fmt.Errorf("open trace file: %w", err)
				}
				closeLinks := done
				done = func() { f.Close(); closeLinks() }
				w = f
			}
			k.Trace = syscalls.NewTracer(w)
		}
		return k, done, nil
	}
	if o.Passthrough {
		k, done, err := newKernel(host, os.TempDir())
		if err != nil {
			return 0, err
		}
		defer done()
		// The store is opened at the first xbegin: a program that never
		// calls it runs without a state directory, as before.
		lazy := &lazyManager{o: o, host: host}
		programs := &syscalls.Programs{Manager: lazy.manager, Host: host, Signals: o.Signals}
		k.EnablePrograms(programs)
		defer lazy.close(programs)
		a, err := newAttempt(o, 0 /* no transaction */)
		if err != nil {
			return 0, err
		}
		if o.FastLookups {
			a.fast = fastLookups(k)
		}
		status, err := supervise(k, cmd, o.Argv, a)
		if err != nil {
			a.discard()
			return 0, err
		}
		a.committed()
		return status, nil
	}
	st, err := openStore(o)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	m := &txn.Manager{Store: st, Host: host, Durable: o.Durable, Excludes: o.Excludes, Outputs: vfs.OutputsOf(commandFDs()),
		KeepUndo: o.KeepUndo, FastLookups: o.FastLookups}
	if gate != nil {
		m.Run, m.RunSeq, m.CommitGate = gate.run, gate.seq, gate.wait
	}
	cwd, _ := os.Getwd()
	for attempt := 0; ; attempt++ {
		t, err := beginAttempt(m, o.Argv, cwd, attempt)
		if err != nil {
			return 0, fmt.Errorf("begin transaction: %w", err)
		}
		k, done, err := newKernel(t.View, st.StagingDir(t.ID))
		if err != nil {
			t.Abort(err.Error())
			return 0, err
		}
		k.OnInternalError = t.View.Doom
		// xbegin nests flat in the tree's transaction; xpause escapes to
		// the host.
		k.EnablePrograms(&syscalls.Programs{Host: host})
		if o.Deterministic {
			k.Determ = determinize(t.View, o.Seed)
			k.PidNamespace = true
		}
		// Released once the transaction has ended: after the
		// write-through of a commit, or the abort (strict two-phase
		// locking; docs/semantics.md §6).
		// With them go the locks the supervisor holds for the tree's
		// descriptions on unchanged host originals.
		hostLocks, treeLocks := hostlock.NewTable(), syscalls.NewTreeLocks()
		k.HostLocks, k.TreeLocks = hostLocks, treeLocks
		if gate != nil {
			// A wait for a later command's lock would last until that
			// command's commit, after this one's: the driver stops it
			// (docs/semantics.md §11).
			k.HostLockWatch = gate.lockWatch(t.ID)
		}
		locks := releaser(func() { treeLocks.Release(); hostLocks.Release() })
		a, err := newAttempt(o, t.ID)
		if err != nil {
			done()
			t.Abort(err.Error())
			locks.Release()
			return 0, err
		}
		a.abortCertain = abortCertainFor(o, t.View.Doomed)
		var endFast func()
		if t.FastLookups != nil {
			defer t.FastLookups.Close()
			a.fast, endFast, err = txFastLookups(k, t, o.Excludes, cmd.program != nil)
			if err != nil {
				done()
				t.Abort(err.Error())
				locks.Release()
				return 0, err
			}
		}
		status, err := supervise(k, cmd, o.Argv, a)
		if endFast != nil {
			// Before validation, and before the commit's write-through
			// changes the host the agent reads.
			endFast()
		}
		done()
		if err != nil {
			a.discard()
			t.Abort("txexec could not run the command: " + err.Error())
			locks.Release()
			return 0, err
		}
		hooks.measureStaging(st.StagingDir(t.ID))
		doomed := t.View.Doomed() != nil
		outcome := txn.Settle(o.OnExit, status, doomed)
		var xabort *syscalls.AbortedError
		if doom := t.View.Doomed(); outcome == txn.Commit && errors.As(doom, &xabort) {
			// The program asked for the abort (xabort inside the tree's
			// transaction): not a failure of txexec's.
			outcome = txn.Abort
		}
		if outcome == txn.Abort {
			why := "--on-exit=abort"
			if o.OnExit == txn.OnExitSuccess {
				why = fmt.Sprintf("the command exited with status %d", status)
			}
			doom := t.View.Doomed()
			if doom != nil {
				// What made the command fail is more useful than its status.
				why = doom.Error() + "; " + why
			}
			if doom == nil && gate != nil && o.OnExit == txn.OnExitSuccess {
				if conflict := staleAtGate(gate, t); conflict != nil {
					// It failed on a state an earlier command of txexec
					// parallel has changed since: the driver runs it again.
					why = fmt.Sprintf("%v; the command failed (status %d) on a state an earlier command changed", conflict, status)
					t.Abort(why)
					st.SetCommandStatus(t.ID, status)
					locks.Release()
					fmt.Fprintf(os.Stderr, "txexec: transaction %d aborted: %s\n", t.ID, why)
					a.dropped("aborted")
					gate.report(gateConflict)
					return exitConflict, nil
				}
			}
			// Recorded after the abort, which frees the staging first: on
			// a disk the staging filled, the store has room only then.
			abortErr := t.Abort(why)
			st.SetCommandStatus(t.ID, status)
			locks.Release()
			if abortErr != nil {
				return 0, abortErr
			}
			fmt.Fprintf(os.Stderr, "txexec: transaction %d aborted: %s\n", t.ID, why)
			a.dropped("aborted")
			return status, nil
		}
		statusErr := st.SetCommandStatus(t.ID, status)
		if outcome == txn.Keep {
			err = keep(t)
			if err == nil && changesFile != "" {
				err = writeChanges(st, t.ID, changesFile)
			}
		} else {
			err = hooks.timeCommit(t.Commit)
		}
		locks.Release()
		if err == nil {
			if outcome == txn.Keep {
				a.dropped("kept")
			} else {
				a.committed() // after write-through
				if gate != nil {
					gate.report(gateCommitted)
				}
			}
			return status, nil
		}
		var ce *txn.CommitError
		if !errors.As(err, &ce) {
			a.discard()
			return 0, err
		}
		if statusErr != nil {
			// A full disk, perhaps, which the abort freed.
			st.SetCommandStatus(t.ID, status)
		}
		// Doomed again: the commit may have found the conflict.
		retry, exit := txn.AfterFailedCommit(ce.Conflict, attempt, o.Retry, status, t.View.Doomed() != nil)
		if retry {
			fmt.Fprintf(os.Stderr, "txexec: transaction %d aborted: %v; retrying (%d of %d)\n", t.ID, ce.Err, attempt+1, o.Retry)
			a.dropped("aborted")
			continue
		}
		fmt.Fprintf(os.Stderr, "txexec: transaction %d aborted: %v\n", t.ID, ce.Err)
		a.dropped("aborted")
		if gate != nil && ce.Conflict {
			gate.report(gateConflict)
		}
		return exit, nil
	}
}

// lazyManager opens the state directory for in-program transactions the
// first time one begins (and finishes interrupted commits then).
type lazyManager struct {
	o    *cli.Run
	host *vfs.Host
	once sync.Once
	m    *txn.Manager
	err  error
}

func (l *lazyManager) manager() (*txn.Manager, error) {
	l.once.Do(func() {
		st, err := openStore(l.o)
		if err != nil {
			l.err = err
			return
		}
		l.m = &txn.Manager{Store: st, Host: l.host, Durable: l.o.Durable, Excludes: l.o.Excludes, Outputs: vfs.OutputsOf(commandFDs())}
	})
	return l.m, l.err
}

// close aborts the in-program transactions the program left open, then
// closes the store if it was opened.
func (l *lazyManager) close(p *syscalls.Programs) {
	p.Close()
	l.once.Do(func() {})
	if l.m != nil {
		l.m.Store.Close()
	}
}

// openStore opens the state directory and finishes interrupted commits.
func openStore(o *cli.Run) (*store.Store, error) {
	dir := stateDirOf(o)
	st, err := store.Open(dir, store.Options{Durable: o.Durable, Owner: selfOwner()})
	if err != nil {
		return nil, fmt.Errorf("open state directory %s: %w", dir, err)
	}
	finished, _, _, err := txn.AutoRecover(st, o.Durable)
	if err != nil {
		st.Close()
		return nil, err
	}
	for _, id := range finished {
		fmt.Fprintf(os.Stderr, "txexec: recovered transaction %d: finished writing it through\n", id)
	}
	return st, nil
}

// defaultStateDir is /var/lib/txexec for root, $XDG_STATE_HOME/txexec else.
func defaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/txexec"
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return x + "/txexec"
	}
	home, _ := os.UserHomeDir()
	return home + "/.local/state/txexec"
}

func selfOwner() store.Owner {
	start, _ := txn.ProcStart(os.Getpid())
	return store.Owner{Pid: os.Getpid(), Start: start}
}

// supervise runs one command tree under k and waits for all of it; a
// holds what the tree's output and signals wait for (see effects.go).
func supervise(k *syscalls.Kernel, cmd command, argv []string, a *runEffects) (int, error) {
	wd, err := os.Getwd()
	if err != nil {
		return 0, fmt.Errorf("find working directory: %w", err)
	}
	cwd, err := k.View.OpenDir(wd)
	if err != nil {
		return 0, err
	}
	root, err := k.View.OpenDir("/")
	if err != nil {
		cwd.Release()
		return 0, err
	}
	umask := unix.Umask(0) // the supervisor applies the caller's umask itself
	defer unix.Umask(umask)
	// The terminal's job-control and interrupt signals reach the command
	// directly (same process group); txexec must survive them, and stops
	// itself only after the command has stopped (see OnStop). They are
	// caught, not ignored: an ignored disposition would be inherited by the
	// command through fork and exec (Ctrl-C would no longer interrupt it),
	// while a caught one is reset to the default. One that txexec was
	// started with ignored stays ignored, for the command too, as without
	// txexec.
	var absorbed []os.Signal
	for _, sig := range []os.Signal{unix.SIGINT, unix.SIGQUIT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU} {
		if !signal.Ignored(sig) {
			absorbed = append(absorbed, sig)
		}
	}
	absorb := make(chan os.Signal, 8)
	signal.Notify(absorb, absorbed...)
	defer signal.Stop(absorb)
	// SIGTERM and SIGHUP are forwarded to the command; caught from before
	// it starts, so that one sent as soon as it runs is not lost (or kills
	// txexec, whose tree would then die of SIGKILL instead).
	forward := make(chan os.Signal, 4)
	signal.Notify(forward, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(forward)
	cfg := interpose.Config{
		Profiled:    os.Getenv(cpuProfileEnv) != "",
		TimeService: os.Getenv(statsEnv) != "",
		Path:        cmd.path,
		Argv:        argv,
		Env:         cmd.env,
		Cred:        cmd.cred,
		Program:     cmd.program,
		Umask:       uint32(umask),
		Rules:       k.Table.Rules(),
		Handler:     k,
		Events:      k,
		Logf:        k.Logf,
		OnStop:      interpose.StopAs,
		// Pids that repeat from run to run (docs/semantics.md §10).
		PidNamespace:   k.PidNamespace,
		FixedAddresses: k.Determ != nil,
		StubExec:       stubExec,
		FastLookups:    a.fast,
	}
	if k.Trace != nil {
		cfg.OnReply = k.Trace.Replied
	}
	if k.Programs != nil && k.Programs.Manager != nil {
		// Every thread waiting in xend (for an ordered predecessor or the
		// commit lock) holds a notification worker: room for a server's
		// threads, so that the predecessor still finds one.
		cfg.MaxWorkers = programsMaxWorkers
	}
	a.attach(k, &cfg)
	fs := proc.NewFS(cwd, root, uint32(umask))
	// The stub's thread is registered before it runs anything.
	var sess *interpose.Session
	started := make(chan struct{})
	cfg.Events = &rootRegistrar{Kernel: k, fs: fs, started: started}
	sess, err = interpose.Start(cfg)
	if err != nil {
		return 0, err
	}
	close(started)
	a.started(sess)
	stopSignals := make(chan struct{})
	defer close(stopSignals)
	go func() {
		for {
			select {
			case <-absorb:
			case s := <-forward:
				unix.Kill(sess.Pid(), s.(unix.Signal))
			case <-stopSignals:
				return
			}
		}
	}()
	ws, err := sess.Wait()
	addTrapped(sess.Served(), sess.ServedByNr())
	treeEvents.add(sess.Counts())
	addService(sess.Service())
	a.finished()
	if err != nil {
		return 0, err
	}
	return interpose.ExitStatus(ws), nil
}

// fastLookups configures the fast path for read-only lookups
// (--fast-lookups, docs/fastpath.md), as a --passthrough run has it: the
// agent forwards what the supervisor does not leave to the kernel (the
// view's passthrough subtrees, /proc, /sys and /dev); the agent of a
// process that has chrooted (its root is the view's, not the kernel's) or
// begun a transaction of its own (xbegin) forwards every lookup, and its
// later images get none. Each agent is told its process's working
// directory (k.AgentCwds), with the directory's identity, which the host
// may rename.
func fastLookups(k *syscalls.Kernel) *interpose.FastLookups {
	f := &interpose.FastLookups{
		Base:      interpose.DefaultAgentBase,
		Forwarded: vfs.DefaultPassthrough,
		Allowed: func(tgid int) bool {
			t := k.Procs.Thread(tgid)
			return t != nil && !t.FS().RootChanged() && !k.Programs.InTransaction(tgid)
		},
	}
	k.AgentOff = func(tid int) {
		if err := f.DisableAgent(tid); err != nil {
			k.Logf("txexec: pid %d: turn the fast-lookup agent off: %v", tid, err)
		}
	}
	k.AgentCwds = &syscalls.AgentCwds{Publish: f.PublishCwd, Identity: true}
	f.Cwd = k.AgentCwd
	return f
}

// txFastLookups configures the fast path for read-only lookups of a
// transaction (--fast-lookups, docs/fastpath.md §4): what fastLookups
// does, and the transaction's tree and a ring per process mapped into
// every image, the rings drained into the view's read set (k.FastRings).
// end turns the fast path off and drains what is left, once the tree of
// processes is gone. The tree itself stays mapped until the attempt's end
// (the view publishes into it until then).
//
// wrapped says the command is a wrapped set-ID program that the stub
// executes from a descriptor txexec opened: a file reached through a mount
// of another mount namespace than the caller's is executed without its
// set-ID bits and file capabilities (mnt_may_suid), so such a tree gets no
// namespace of its own, and no native opens. (A wrapped run has the fast
// path off today, runWrapped; this keeps a wrapped program's privileges if
// it is ever on for one, as it was in a run of the whole e2e suite with the
// option forced on.)
func txFastLookups(k *syscalls.Kernel, t *txn.Transaction, excludes []string, wrapped bool) (f *interpose.FastLookups, end func(), err error) {
	treeFD, err := t.FastLookups.ReadOnlyFD()
	if err != nil {
		return nil, nil, fmt.Errorf("fast lookups: %w", err)
	}
	rings := syscalls.NewFastRings(t.View, t.FastLookups)
	k.FastRings = rings
	f = fastLookups(k)
	f.Forwarded = append(append([]string(nil), f.Forwarded...), excludes...)
	// The view names the working directory by the path it keeps; the
	// read set has that path's entries.
	k.AgentCwds.Identity = false
	f.Shared = &interpose.SharedMemory{
		TreeFD: treeFD, TreeSize: fastlookup.TreeSize, RingSize: fastlookup.RingSize,
		Ring: rings.Ring, Failed: rings.Failed,
		// Read-only opens natively only where the view's own reads
		// leave no atime either (its private noatime mount), which
		// also says txexec may make the tree's mount namespace.
		NativeOpens: t.View.NoatimeIsolation() && !wrapped,
	}
	t.FastLookups.Enable(true)
	rings.Background()
	end = func() {
		rings.Finish()
		unix.Close(treeFD)
	}
	return f, end, nil
}

// rootRegistrar registers the command's first thread the first time the
// tracer reports anything about it (its execve), then defers to the Kernel.
type rootRegistrar struct {
	*syscalls.Kernel
	fs      *proc.FS
	started chan struct{}
	done    bool
}

func (r *rootRegistrar) Exec(req *interpose.ExecRequest) interpose.ExecPlan {
	if !r.done {
		r.done = true
		r.Procs.AddRoot(req.Tid, r.fs)
		if r.Determ != nil {
			r.Determ.Root(req.Tid)
		}
	}
	return r.Kernel.Exec(req)
}

// releaser releases a transaction's locks.
type releaser func()

func (r releaser) Release() { r() }
