package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"txexec/determ"
	"txexec/signals"
	"txexec/syscalls"
	"txexec/txn"
)

// Output is when the command's output reaches txexec's own stdout and
// stderr (--output).
type Output int

const (
	// OutputLive passes it on as it is written (the default).
	OutputLive Output = iota
	// OutputDefer holds it until the transaction commits, and drops it at
	// abort.
	OutputDefer
)

// Names on the command line of each enumeration's values, in value order.
var (
	outputNames      = []string{"live", "defer"}
	signalsNames     = []string{"defer", "immediate"}
	unsupportedNames = []string{"abort", "error", "allow"}
	undoNames        = []string{"keep", "none"}
)

func (o Output) String() string { return nameOf(outputNames, int(o)) }

func nameOf(names []string, v int) string {
	if v < 0 || v >= len(names) {
		return strconv.Itoa(v)
	}
	return names[v]
}

// Run is the parsed command line of a run: txexec [options] -- COMMAND.
type Run struct {
	OnExit      txn.OnExit
	Retry       int // re-runs allowed after a commit conflict
	Durable     bool
	Unsupported syscalls.Policy
	Output      Output
	Signals     signals.Policy
	Excludes    []string
	Passthrough bool
	InProgram   bool // --in-program (Passthrough too)
	// FastLookups is the fast path for read-only lookups: made natively
	// by an agent in the program (docs/fastpath.md). On unless
	// --no-fast-lookups, or an option it cannot be combined with, is given.
	FastLookups bool
	// FastLookupsAsked is --fast-lookups given explicitly: with an option
	// the fast path cannot be combined with, that is an error rather than
	// the fast path left off.
	FastLookupsAsked bool
	KeepUndo         bool // --undo=keep: keep before-images for txexec undo
	Trace            bool
	TraceFile        string // "": stderr
	StateDir         string // "": $TXEXEC_STATE_DIR or the default
	// Deterministic runs the command in the deterministic environment
	// with Seed (--deterministic[=SEED]).
	Deterministic bool
	Seed          uint64
	// Repeat runs it that many times and compares the outcomes (0: once,
	// as usual); VarySeed gives each run the next seed.
	Repeat   int
	VarySeed bool
	// Record keeps what the run read and produced (--record).
	Record  bool
	Help    bool // --help: print Usage, run nothing
	Version bool // --version: print the version, run nothing
	Argv    []string
	// Jobs, KeepGoing and JSON are txexec parallel's (ParallelOptions).
	Jobs      int // commands run at once; 0: the number of CPUs
	KeepGoing bool
	JSON      bool
}

// Defaults is a Run before any option.
func Defaults() Run {
	return Run{OnExit: txn.OnExitSuccess, Durable: true, Unsupported: syscalls.PolicyAbort,
		Output: OutputLive, Signals: signals.Defer, KeepUndo: true, FastLookups: true}
}

// ValueKind is whether an option takes a value.
type ValueKind int

const (
	// NoValue: a flag (--passthrough).
	NoValue ValueKind = iota
	// RequiredValue: --name VALUE or --name=VALUE.
	RequiredValue
	// OptionalValue: --name alone or --name=VALUE (never a separate word,
	// which would be taken for the command).
	OptionalValue
)

// Completion is what a value is completed from in the bash completion.
type Completion int

const (
	// CompleteNothing: a number or free text.
	CompleteNothing Completion = iota
	// CompleteFile: any path.
	CompleteFile
	// CompleteDir: a directory.
	CompleteDir
)

// Option is one option of a run, and everything said about it anywhere.
type Option struct {
	Name  string // without the leading "--"
	Short string // one-letter form without its "-", if any
	Kind  ValueKind
	// Arg names the value in help (N, PATH, DIR, FILE); unused for options
	// with Choices, whose choices are shown instead.
	Arg string
	// Choices are the only values allowed, if the set is closed.
	Choices []string
	// Default is the value (or behaviour) without the option, for help and
	// the man page; "" when there is nothing to say.
	Default string
	// Env is an environment variable that stands for the option when it is
	// absent.
	Env      string
	Repeat   bool       // may be given more than once, each adding a value
	Complete Completion // for a value without Choices
	// Help is its line in --help; Doc its paragraph in the man page.
	Help, Doc string
	// set applies the (checked) value to a Run; "" for a flag, or for an
	// optional value not given.
	set func(r *Run, v string) error
}

// StateDirEnv names the state directory when --state-dir is not given.
const StateDirEnv = "TXEXEC_STATE_DIR"

// Options are a run's options, in the order help and the man page list them.
var Options = []Option{
	{
		Name: "on-exit", Kind: RequiredValue, Choices: txn.OnExitNames, Default: "success",
		Help: "commit if the tree exits 0 (default) / always / never / keep",
		Doc: "What to do with the transaction once the whole process tree has exited: " +
			"success commits if the command exited 0 and aborts otherwise; commit always commits; " +
			"abort never does (a dry run); keep stores it prepared for txexec commit ID or txexec abort ID.",
		set: func(r *Run, v string) error { r.OnExit, _ = txn.ParseOnExit(v); return nil },
	},
	{
		Name: "retry", Kind: RequiredValue, Arg: "N", Default: "0",
		Help: "re-run up to N times when the commit conflicts",
		Doc: "Run the command again, up to N times, when its commit loses to another transaction. " +
			"Under txexec parallel, the re-runs after a conflict with a process outside the run " +
			"(a conflict with an earlier command of the run is always re-run).",
		set: func(r *Run, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("--retry %s: expected a count", v)
			}
			r.Retry = n
			return nil
		},
	},
	{
		Name: "no-durable",
		Help: "atomic and isolated, not fsynced",
		Doc: "No fsync at all: the transaction is still atomic and isolated if the command or txexec dies, " +
			"but after an operating-system crash or power loss a commit txexec reported may be lost or partly " +
			"written through, and the state database itself may be damaged.",
		set: func(r *Run, _ string) error { r.Durable = false; return nil },
	},
	{
		Name: "unsupported", Kind: RequiredValue, Choices: unsupportedNames, Default: "abort",
		Help: "calls without transactional meaning",
		Doc: "What a call with no transactional meaning (mount, io_uring, ...) does: abort aborts the transaction, " +
			"error fails the call with ENOTSUP, allow runs it anyway with a warning.",
		set: func(r *Run, v string) error {
			r.Unsupported = syscalls.Policy(slices.Index(unsupportedNames, v))
			return nil
		},
	},
	{
		Name: "output", Kind: RequiredValue, Choices: outputNames, Default: "live",
		Help: "release the command's output now or at commit",
		Doc:  "live passes the command's output on as it is written; defer holds it until the transaction commits and drops it at abort.",
		set:  func(r *Run, v string) error { r.Output = Output(slices.Index(outputNames, v)); return nil },
	},
	{
		Name: "signals", Kind: RequiredValue, Choices: signalsNames, Default: "defer",
		Help: "signals sent out of the transaction",
		Doc:  "defer delivers signals the command sends to processes outside the transaction at commit (and drops them at abort); immediate delivers them at once.",
		set: func(r *Run, v string) error {
			r.Signals = signals.Policy(slices.Index(signalsNames, v))
			return nil
		},
	},
	{
		Name: "exclude", Kind: RequiredValue, Arg: "PATH", Repeat: true, Complete: CompleteDir,
		Help: "writes under PATH bypass the transaction (repeatable)",
		Doc:  "Writes under the directory PATH go to the host at once, outside the transaction. PATH must be an existing directory, not named through a final symlink.",
		set:  func(r *Run, v string) error { r.Excludes = append(r.Excludes, v); return nil },
	},
	{
		Name: "undo", Kind: RequiredValue, Choices: undoNames, Default: "keep",
		Help: "keep before-images for txexec undo, or none",
		Doc: "keep makes the write-through keep what the transaction replaced or removed (hard links, no copies) " +
			"and the attributes it changed, so that txexec undo ID can put them back; none keeps nothing. " +
			"txexec gc drops them beyond the retention (the last 50 transactions, 1 GiB).",
		set: func(r *Run, v string) error { r.KeepUndo = v == "keep"; return nil },
	},
	{
		Name: "passthrough",
		Help: "interpose, but no transaction",
		Doc: "Supervise the command without a transaction: every call reaches the host (debugging, baselines), " +
			"except those of a thread that began a transaction of its own (xbegin, include/txexec.h).",
		set: func(r *Run, _ string) error { r.Passthrough = true; return nil },
	},
	{
		Name: "in-program",
		Help: "no transaction around the command: its threads begin their own",
		Doc: "The same as --passthrough, named for its use: the program makes its own transactions with the " +
			"in-program API (xbegin, xend, xabort, xpause, xresume; include/txexec.h, the Go package txexec/tx, " +
			"python/txexec.py), one per thread that calls xbegin, while its other threads act on the host. " +
			"--no-durable, --unsupported, --signals and --state-dir apply to those transactions.",
		set: func(r *Run, _ string) error { r.Passthrough, r.InProgram = true, true; return nil },
	},
	{
		Name: "fast-lookups",
		Help: "make read-only lookups natively in the program (the default)",
		Doc: "The default: an agent mapped into every program of the tree at its exec makes " +
			"stat, statx, access, readlink, getcwd and read-only opens, by path or relative to a descriptor, " +
			"natively, from call sites the supervisor rewrites while it serves their first call (docs/fastpath.md). " +
			"In a transaction a call is made natively only where the view has walked and the transaction changed " +
			"nothing on the way, and every call made natively is added to the read set: the transaction's " +
			"isolation, conflicts and symlink checks are the same as without it. Paths under /proc, /sys and /dev, " +
			"opens for writing, Go programs and multi-threaded processes stay on the supervisor. Native opens need " +
			"a mount namespace of the tree's own whose mounts update no atime (so /proc/self/mountinfo shows noatime). " +
			"The agent shows in /proc/self/maps, and its O_PATH opens are real ones; docs/semantics.md lists the " +
			"other differences. Off with --deterministic, --in-program and --trace (an error when asked for with them), " +
			"and for wrapped set-ID programs.",
		set: func(r *Run, _ string) error { r.FastLookups, r.FastLookupsAsked = true, true; return nil },
	},
	{
		Name: "no-fast-lookups",
		Help: "every lookup served by the supervisor",
		Doc: "Turn the fast path off: every call the filter traps reaches the supervisor, as in releases before " +
			"it was the default (for comparisons, and for programs that must not have the agent mapped).",
		set: func(r *Run, _ string) error { r.FastLookups, r.FastLookupsAsked = false, false; return nil },
	},
	{
		Name: "trace", Kind: OptionalValue, Arg: "FILE", Complete: CompleteFile,
		Help: "one line per intercepted call",
		Doc:  "Write one strace-like line per intercepted call to FILE (appended), or to stderr.",
		set:  func(r *Run, v string) error { r.Trace, r.TraceFile = true, v; return nil },
	},
	{
		Name: "deterministic", Kind: OptionalValue, Arg: "SEED", Default: "off; SEED 0 when given alone",
		Help: "virtual time, seeded randomness, fixed names",
		Doc: "Run the command deterministically: a virtual clock that starts at 2000-01-01 and moves 1 ms per read " +
			"(sleeps return at once), random bytes (getrandom, /dev/urandom, AT_RANDOM) from streams seeded by SEED " +
			"and each process's place in the tree, a pid namespace, the host name txexec, 4 CPUs, host directories " +
			"listed by name, and times of changed files from the virtual clock. Same SEED and inputs, same outputs; " +
			"docs/semantics.md §10 lists what is not determinized. Needs root (CAP_SYS_ADMIN) for the pid namespace.",
		set: func(r *Run, v string) error {
			r.Deterministic = true
			if v == "" {
				return nil
			}
			seed, err := determ.ParseSeed(v)
			if err != nil {
				return fmt.Errorf("--deterministic=%s: %w", v, err)
			}
			r.Seed = seed
			return nil
		},
	},
	{
		Name: "record",
		Help: "keep what the run read and produced, for txexec replay",
		Doc: "Run deterministically (--deterministic, SEED 0 unless given) and record the command, its environment, " +
			"cwd and seed, the contents of every host file it read (blobs in the state directory, shared between " +
			"recordings) and its outcome: exit status, stdout, stderr and changes. The transaction then ends as " +
			"--on-exit says. stdout and stderr reach the terminal through txexec, as pipes. txexec replay ID runs it again.",
		set: func(r *Run, _ string) error { r.Record, r.Deterministic = true, true; return nil },
	},
	{
		Name: "repeat", Kind: RequiredValue, Arg: "N",
		Help: "with --deterministic: run N times, compare the outcomes",
		Doc: "With --deterministic: run the command N times, each in a transaction that is aborted, and report whether " +
			"the exit status, stdout, stderr and changes (paths and contents) of every run agree with the first's; " +
			"exit status 0 if they do, 1 if not. The first run's output is shown.",
		set: func(r *Run, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("--repeat %s: expected a count of at least 1", v)
			}
			r.Repeat = n
			return nil
		},
	},
	{
		Name: "vary-seed",
		Help: "with --repeat: run i gets SEED+i",
		Doc:  "With --repeat: give each run the next seed (SEED, SEED+1, ...) instead of the same one.",
		set:  func(r *Run, _ string) error { r.VarySeed = true; return nil },
	},
	{
		Name: "state-dir", Kind: RequiredValue, Arg: "DIR", Env: StateDirEnv, Complete: CompleteDir,
		Default: "/var/lib/txexec for root, $XDG_STATE_HOME/txexec (~/.local/state/txexec) otherwise",
		Help:    "store and staging area",
		Doc: "The store and the staging area for its own mount; changes on other mounts are staged in a " +
			"directory at their root. The subcommands take it too.",
		set: func(r *Run, v string) error { r.StateDir = v; return nil },
	},
	{
		Name: "version",
		Help: "print txexec's version",
		Doc:  "Print txexec's version and exit.",
		set:  func(r *Run, _ string) error { r.Version = true; return nil },
	},
	{
		Name: "help", Short: "h",
		Help: "this help",
		Doc:  "Print a summary of the options and subcommands and exit.",
		set:  func(r *Run, _ string) error { r.Help = true; return nil },
	},
}

// ParallelOptions are txexec parallel's own options, which it takes
// besides a run's (Options); a run refuses them.
var ParallelOptions = []Option{
	{
		Name: "jobs", Short: "j", Kind: RequiredValue, Arg: "N", Default: "the number of CPUs",
		Help: "run at most N commands at once",
		Doc:  "Run at most N of the commands at once.",
		set: func(r *Run, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("--jobs %s: expected a count of at least 1", v)
			}
			r.Jobs = n
			return nil
		},
	},
	{
		Name: "keep-going",
		Help: "run the later commands after one fails",
		Doc: "Run every command even after one failed (a failed command's transaction aborts; later commands " +
			"see the state without it). Without it, the first failure stops the commands after it, like make: " +
			"they are killed and nothing of them is committed.",
		set: func(r *Run, _ string) error { r.KeepGoing = true; return nil },
	},
	{
		Name: "json",
		Help: "one JSON object per command, then a summary",
		Doc: "Write on stdout, instead of the commands' output, one JSON object per command in input order " +
			"(its command, outcome, exit status, transactions, re-runs, time and output) and then one for the summary.",
		set: func(r *Run, _ string) error { r.JSON = true; return nil },
	},
}

// Lookup is the option of a name (without "--"), or nil.
func Lookup(name string) *Option { return lookupIn(Options, name) }

func lookupIn(table []Option, name string) *Option {
	for i := range table {
		if table[i].Name == name {
			return &table[i]
		}
	}
	return nil
}

// UsageError is a bad command line: one line on stderr, exit status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// Parse parses a run's command line, "[options] -- COMMAND [ARG...]":
// options end at "--" or at the first word that is not an option. Values
// are checked here as far as they can be without looking at the system
// (--exclude's directory is the caller's to check). A command is required
// unless --help or --version was given.
func Parse(args []string) (*Run, error) {
	r, args, err := parseOptions(args, Options, nil)
	if err != nil {
		return nil, err
	}
	if err := checkCombinations(r); err != nil {
		return nil, err
	}
	if len(args) == 0 && !r.Help && !r.Version {
		return nil, Usagef("no command given (usage: txexec [options] -- COMMAND [ARG...])")
	}
	r.Argv = args
	return r, nil
}

// parseOptions parses options of table up to "--" (consumed) or the first
// word that is not one, and returns the rest; each option's words as
// given are appended to *words when words is not nil.
func parseOptions(args []string, table []Option, words map[string][]string) (*Run, []string, error) {
	r := Defaults()
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		var o *Option
		name, val, hasVal := "", "", false
		switch {
		case strings.HasPrefix(a, "--"):
			name, val, hasVal = strings.Cut(a[2:], "=")
			if o = lookupIn(table, name); o == nil {
				return nil, nil, Usagef("unknown option --%s (see txexec --help)", name)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for i := range table {
				short := "-" + table[i].Short
				switch {
				case table[i].Short == "":
				case a == short:
					o = &table[i]
				case table[i].Kind == RequiredValue && strings.HasPrefix(a, short):
					o, val, hasVal = &table[i], a[len(short):], true // -j4
				}
			}
			if o != nil {
				name = o.Name
			}
		}
		if o == nil {
			break // the command (a word with one dash that is no short option too)
		}
		args = args[1:]
		switch o.Kind {
		case NoValue:
			if hasVal {
				return nil, nil, Usagef("option --%s takes no value", name)
			}
		case RequiredValue:
			if !hasVal {
				if len(args) == 0 {
					return nil, nil, Usagef("option --%s needs a value", name)
				}
				val, args = args[0], args[1:]
			}
		}
		if o.Choices != nil && !slices.Contains(o.Choices, val) {
			return nil, nil, Usagef("--%s=%s: expected one of %s", name, val, strings.Join(o.Choices, ", "))
		}
		if err := o.set(&r, val); err != nil {
			return nil, nil, &UsageError{err.Error()}
		}
		if words != nil {
			w := "--" + o.Name
			if o.Kind != NoValue && (o.Kind == RequiredValue || hasVal) {
				w += "=" + val
			}
			words[o.Name] = append(words[o.Name], w)
		}
	}
	return &r, args, nil
}

// checkCombinations refuses options that need another, or exclude it.
func checkCombinations(r *Run) error {
	if r.FastLookups && !r.FastLookupsAsked && (r.Deterministic || r.InProgram || r.Trace) {
		// The default gives way to an option that excludes it.
		r.FastLookups = false
	}
	switch {
	case r.Repeat > 0 && !r.Deterministic:
		return Usagef("--repeat needs --deterministic")
	case r.VarySeed && r.Repeat == 0:
		return Usagef("--vary-seed needs --repeat")
	case r.FastLookups && r.Deterministic:
		return Usagef("--fast-lookups cannot be combined with --deterministic (the fast path answers with the host's times and inode numbers)")
	case r.FastLookups && r.InProgram:
		return Usagef("--fast-lookups cannot be combined with --in-program (a thread's own transaction must see its lookups)")
	case r.FastLookups && r.Trace:
		return Usagef("--fast-lookups cannot be combined with --trace (the calls it makes natively would be missing from the trace)")
	case r.Deterministic && r.Passthrough:
		return Usagef("--deterministic needs a transaction around the command; it cannot be combined with --passthrough or --in-program")
	case r.Repeat > 0 && r.OnExit != txn.OnExitSuccess:
		return Usagef("--repeat aborts every run; it cannot be combined with --on-exit")
	case r.Repeat > 0 && r.Record:
		return Usagef("--repeat and --record cannot be combined")
	case (r.Repeat > 0 || r.Record) && r.Output == OutputDefer:
		return Usagef("--output=defer cannot be combined with --repeat or --record, which capture the output")
	}
	return nil
}
