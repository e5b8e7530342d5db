package syscalls

import (
	"fmt"
	"sort"

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

func observedNote(nr int, name string, h Handler, note string, args ...ArgFmt) Entry {
	return Entry{Nr: nr, Name: name, Support: Observed, Handler: h, Note: note, Args: args}
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
		switch e.Support {
		case Emulated, Partial, Observed, NoTxMeaning:
			if e.Handler == nil {
				return nil, fmt.Errorf("syscall table: %s is %v but has no handler", e.Name, e.Support)
			}
		case Passthrough, Refused, Exec:
			if e.Handler != nil {
				return nil, fmt.Errorf("syscall table: %s is %v and must not have a handler", e.Name, e.Support)
			}
		}
		if (e.Support == Partial || e.Support == Refused || e.Support == NoTxMeaning) && e.Note == "" {
			return nil, fmt.Errorf("syscall table: %s is %v and needs a note", e.Name, e.Support)
		}
		t.byNr[e.Nr] = e
	}
	return t, nil
}

// Lookup returns the entry for nr, or nil.
func (t *Table) Lookup(nr int) *Entry { return t.byNr[nr] }

// Entries returns the table sorted by number.
func (t *Table) Entries() []Entry {
	out := append([]Entry(nil), t.list...)
	sort.Slice(out, func(i, j int) bool { return out[i].Nr < out[j].Nr })
	return out
}

// Rules derives the seccomp filter from the table: one rule per entry;
// numbers not in the table are refused by the filter's default action.
func (t *Table) Rules() []interpose.Rule {
	rules := make([]interpose.Rule, 0, len(t.list))
	for _, e := range t.Entries() {
		r := interpose.Rule{Nr: e.Nr}
		switch e.Support {
		case Emulated, Partial, Observed, NoTxMeaning:
			r.Action = interpose.ActNotify
		case Passthrough:
			r.Action = interpose.ActAllow
		case Refused:
			r.Action, r.Errno = interpose.ActErrno, e.Errno
		case Exec:
			r.Action = interpose.ActTrace
		}
		rules = append(rules, r)
	}
	return rules
}
