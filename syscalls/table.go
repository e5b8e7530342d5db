package syscalls

import (
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"txexec/interpose"
)

// Support says how txexec treats a system call.
type Support uint8

const (
	// Emulated: the supervisor performs the call in the caller's view and
	// answers with its result.
	Emulated Support = iota
	// Partial: emulated, with a documented difference from Linux (Note).
	Partial
	// Passthrough: the kernel runs the call without the supervisor; it has
	// no file-system effect outside descriptors the view already handed out.
	Passthrough
	// Observed: the supervisor sees the call, records what it needs from
	// the registers (umask, credentials) and lets the kernel run it.
	Observed
	// Refused: failed in the filter with a fixed errno (Errno).
	Refused
	// NoTxMeaning: a call with no transactional meaning; what happens
	// follows --unsupported=abort|error|allow.
	NoTxMeaning
	// Exec: stopped for the ptrace tracer (execve, execveat).
	Exec
)

func (s Support) String() string {
	return [...]string{"emulated", "partial", "passthrough", "observed", "refused", "no-tx-meaning", "exec"}[s]
}

// Handler serves one intercepted call.
type Handler func(k *Kernel, c *interpose.Call) interpose.Reply

// ArgFmt says how --trace prints one argument.
type ArgFmt uint8

const (
	ArgHex       ArgFmt = iota // any value, printed in hex
	ArgInt                     // signed C int
	ArgUint                    // unsigned decimal (sizes, counts)
	ArgFD                      // descriptor or AT_FDCWD
	ArgPath                    // NUL-terminated string in tracee memory
	ArgOpenFlags               // O_* flags
	ArgMode                    // octal mode
	ArgAtFlags                 // AT_* flags
	ArgSignal                  // signal number
	ArgPtr                     // address, printed as hex or NULL
)

// Entry is one row of the syscall table.
type Entry struct {
	Nr      int
	Name    string
	Support Support
	// Handler serves Emulated, Partial, Observed and NoTxMeaning calls.
	Handler Handler
	// Errno is the answer of a Refused call.
	Errno unix.Errno
	// Note explains a Partial, Refused or NoTxMeaning entry.
	Note string
	// Args formats the arguments for --trace.
	Args []ArgFmt
	// Cases refine the entry for calls whose argument matches (ioctl by
	// request, clone by namespace flag), tried in order; Support, Handler,
	// Errno and Note above are for every call that matches none of them.
	Cases []Case
}

// Case is the treatment of the calls of one entry whose argument matches
// When. The filter decides it from the registers, so a call that matches
// no case never reaches the supervisor.
type Case struct {
	// Name is the matched value as docs/syscalls.md and --trace print it
	// (FS_IOC_SETFLAGS, CLONE_NEWNS).
	Name    string
	When    interpose.ArgCond
	Support Support
	Handler Handler
	Errno   unix.Errno
	Note    string
}

// CaseOf returns the case the call's arguments match, as the filter
// decides it, or nil.
func (e *Entry) CaseOf(args [6]interpose.Arg) *Case {
	for i := range e.Cases {
		if e.Cases[i].When.Matches(args) {
			return &e.Cases[i]
		}
	}
	return nil
}

// HandlerFor returns what serves a call of e with these arguments: its
// case's handler, or the entry's own.
func (e *Entry) HandlerFor(args [6]interpose.Arg) Handler {
	if cs := e.CaseOf(args); cs != nil {
		return cs.Handler
	}
	return e.Handler
}

// Constructors keep the table one line per call.

func emulated(nr int, name string, h Handler, args ...ArgFmt) Entry {
	return Entry{Nr: nr, Name: name, Support: Emulated, Handler: h, Args: args}
}

func partial(nr int, name string, h Handler, note string, args ...ArgFmt) Entry {
	return Entry{Nr: nr, Name: name, Support: Partial, Handler: h, Note: note, Args: args}
}

func passthrough(nr int, name string, args ...ArgFmt) Entry {
	return Entry{Nr: nr, Name: name, Support: Passthrough, Args: args}
}

func observed(nr int, name string, h Handler, args ...ArgFmt) Entry {
	return Entry{Nr: nr, Name: name, Support: Observed, Handler: h, Args: args}
}

func refused(nr int, name string, errno unix.Errno, note string, args ...ArgFmt) Entry {
	return Entry{Nr: nr, Name: name, Support: Refused, Errno: errno, Note: note, Args: args}
}

func noTxMeaning(nr int, name string, note string, args ...ArgFmt) Entry {
	return Entry{Nr: nr, Name: name, Support: NoTxMeaning, Handler: unsupportedCall, Note: note, Args: args}
}

func execEntry(nr int, name string, args ...ArgFmt) Entry {
	return Entry{Nr: nr, Name: name, Support: Exec, Args: args}
}

// withCases gives e its argument cases.
func withCases(e Entry, cases ...Case) Entry {
	e.Cases = cases
	return e
}

// argIs matches a call whose argument arg, an int the kernel reads as 32
// bits (ioctl's request, fcntl's command), is value: the upper half of
// the register is ignored, as the kernel ignores it.
func argIs(arg int, value uint32) interpose.ArgCond {
	return interpose.ArgCond{Arg: arg, Mask: 0xffffffff, Value: uint64(value)}
}

// argHas matches a call whose flags argument arg has every bit of bits.
func argHas(arg int, bits uint64) interpose.ArgCond {
	return interpose.ArgCond{Arg: arg, Mask: bits, Value: bits}
}

// Table is the syscall table, indexed by number.
type Table struct {
	byNr map[int]*Entry
	list []Entry
}

// NewTable indexes entries and checks the table's invariants.
func NewTable(entries []Entry) (*Table, error) {
	t := &Table{byNr: make(map[int]*Entry, len(entries)), list: entries}
	for i := range t.list {
		e := &t.list[i]
		if prev, dup := t.byNr[e.Nr]; dup {
			return nil, fmt.Errorf("syscall table: %s and %s both claim number %d", prev.Name, e.Name, e.Nr)
		}
		if err := checkDecision(e.Name, e.Support, e.Handler, e.Note); err != nil {
			return nil, err
		}
		seen := map[interpose.ArgCond]string{}
		for _, cs := range e.Cases {
			name := e.Name + " " + cs.Name
			if err := checkDecision(name, cs.Support, cs.Handler, cs.Note); err != nil {
				return nil, err
			}
			if cs.Support == Exec || e.Support == Exec {
				return nil, fmt.Errorf("syscall table: %s: exec calls have no argument cases", name)
			}
			if cs.When.Arg < 0 || cs.When.Arg >= len(e.Args) {
				return nil, fmt.Errorf("syscall table: %s: %s has no argument %d", name, e.Name, cs.When.Arg)
			}
			if cs.When.Value&^cs.When.Mask != 0 {
				return nil, fmt.Errorf("syscall table: %s never matches (value %#x outside mask %#x)", name, cs.When.Value, cs.When.Mask)
			}
			if prev, dup := seen[cs.When]; dup {
				return nil, fmt.Errorf("syscall table: %s and %s are the same case of %s", prev, cs.Name, e.Name)
			}
			seen[cs.When] = cs.Name
		}
		t.byNr[e.Nr] = e
	}
	return t, nil
}

// checkDecision checks that a support level comes with a handler exactly
// when the supervisor serves it, and with a note where it differs from
// Linux.
func checkDecision(name string, s Support, h Handler, note string) error {
	switch s {
	case Emulated, Partial, Observed, NoTxMeaning:
		if h == nil {
			return fmt.Errorf("syscall table: %s is %v but has no handler", name, s)
		}
	case Passthrough, Refused, Exec:
		if h != nil {
			return fmt.Errorf("syscall table: %s is %v and must not have a handler", name, s)
		}
	}
	if (s == Partial || s == Refused || s == NoTxMeaning) && note == "" {
		return fmt.Errorf("syscall table: %s is %v and needs a note", name, s)
	}
	return nil
}

// Lookup returns the entry for nr, or nil.
func (t *Table) Lookup(nr int) *Entry { return t.byNr[nr] }

// Entries returns the table sorted by number.
func (t *Table) Entries() []Entry {
	out := append([]Entry(nil), t.list...)
	sort.Slice(out, func(i, j int) bool { return out[i].Nr < out[j].Nr })
	return out
}

// Rules derives the seccomp filter from the table: one rule per entry and
// one per argument case (before the entry's, which covers the other
// calls); numbers not in the table are refused by the filter's default
// action.
func (t *Table) Rules() []interpose.Rule {
	rules := make([]interpose.Rule, 0, len(t.list))
	for _, e := range t.Entries() {
		for _, cs := range e.Cases {
			r := rule(e.Nr, cs.Support, cs.Errno)
			r.If = &cs.When
			rules = append(rules, r)
		}
		rules = append(rules, rule(e.Nr, e.Support, e.Errno))
	}
	return rules
}

// rule is the filter's action for a support level.
func rule(nr int, s Support, errno unix.Errno) interpose.Rule {
	r := interpose.Rule{Nr: nr}
	switch s {
	case Emulated, Partial, Observed, NoTxMeaning:
		r.Action = interpose.ActNotify
	case Passthrough:
		r.Action = interpose.ActAllow
	case Refused:
		r.Action, r.Errno = interpose.ActErrno, errno
	case Exec:
		r.Action = interpose.ActTrace
	}
	return r
}

// callNames maps every number of AllEntries to its name.
var callNames = sync.OnceValue(func() map[int]string {
	m := map[int]string{}
	for _, e := range AllEntries() {
		m[e.Nr] = e.Name
	}
	return m
})

// NameOf names system call nr as the table does, or "syscall N" for a
// number it has no entry for.
func NameOf(nr int) string {
	if name, ok := callNames()[nr]; ok {
		return name
	}
	return fmt.Sprintf("syscall %d", nr)
}
