package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"txexec/internal/cli"
	"txexec/store"
	"txexec/txn"
)

// Exit status of a subcommand refused for the transaction's id or state.
const exitRefused = 1

// subcommands are the words that, first on the command line, name a
// subcommand instead of a COMMAND to run (run COMMAND of that name with
// "txexec -- log").
var subcommands = map[string]func(c *subcommand) int{
	"log":     cmdLog,
	"show":    cmdShow,
	"commit":  cmdCommit,
	"abort":   cmdAbort,
	"recover": cmdRecover,
	"replay":  cmdReplay,
	"export":  cmdExport,
	"undo":    cmdUndo,
	"gc":      cmdGC,
}

// subcommand is a parsed subcommand line: txexec NAME [ID] [flags].
type subcommand struct {
	name   string
	id     int64
	json   bool    // log --json
	diff   bool    // show --diff, replay --diff
	file   string  // replay FILE: an exported recording
	commit bool    // replay --commit
	output string  // export -o FILE
	run    int64   // log --run ID: one txexec parallel run's transactions
	dryRun bool    // undo --dry-run
	force  bool    // undo --force
	all    bool    // gc --all
	ids    []int64 // gc ID...
	// keepLast and maxSize are gc's retention settings (nil: unchanged).
	keepLast *int
	maxSize  *int64
	opts     cli.Run   // Durable and StateDir
	out      io.Writer // results (log, show, recover)
	errOut   io.Writer // "txexec: " messages
}

// runSubcommand runs args as a subcommand if args[0] names one (after a
// leading --state-dir DIR, which it also accepts), and returns its exit
// status.
func runSubcommand(args []string) (status int, ok bool) {
	var lead []string
	switch {
	case len(args) > 2 && args[0] == "--state-dir":
		lead, args = args[:2], args[2:]
	case len(args) > 1 && strings.HasPrefix(args[0], "--state-dir="):
		lead, args = args[:1], args[1:]
	}
	if len(args) == 0 || subcommands[args[0]] == nil {
		return 0, false
	}
	c, err := parseSubcommand(append(append([]string{args[0]}, lead...), args[1:]...))
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitUsage, true
	}
	c.out, c.errOut = os.Stdout, os.Stderr
	return subcommands[c.name](c), true
}

// parseSubcommand parses "NAME [ID] [--json|--diff|--no-durable|--state-dir DIR]".
func parseSubcommand(args []string) (*subcommand, error) {
	c := &subcommand{name: args[0], opts: cli.Run{Durable: true}}
	needID := c.name == "show" || c.name == "commit" || c.name == "abort" || c.name == "export" || c.name == "undo"
	haveID := false
	what := "transaction"
	if c.name == "replay" || c.name == "export" {
		what = "recording"
	}
	for rest := args[1:]; len(rest) > 0; rest = rest[1:] {
		a := rest[0]
		switch {
		case a == "--json" && c.name == "log":
			c.json = true
		case (a == "--run" || strings.HasPrefix(a, "--run=")) && c.name == "log":
			v, ok := strings.CutPrefix(a, "--run=")
			if !ok {
				if len(rest) < 2 {
					return nil, cli.Usagef("log: option --run needs a value (the run id txexec parallel printed)")
				}
				v, rest = rest[1], rest[1:]
			}
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				return nil, cli.Usagef("log: --run %q is not a run id", v)
			}
			c.run = id
		case a == "--diff" && (c.name == "show" || c.name == "replay"):
			c.diff = true
		case a == "--commit" && c.name == "replay":
			c.commit = true
		case (a == "-o" || a == "--output") && c.name == "export":
			if len(rest) < 2 {
				return nil, cli.Usagef("export: %s needs a file", a)
			}
			c.output, rest = rest[1], rest[1:]
		case c.name == "replay" && !haveID && c.file == "" && !strings.HasPrefix(a, "-"):
			// A recording's id, or a file that export wrote: a number
			// is an id unless a file of that name exists.
			if id, err := strconv.ParseInt(a, 10, 64); err == nil && id > 0 {
				if _, statErr := os.Stat(a); statErr != nil {
					c.id, haveID = id, true
					continue
				}
			}
			c.file = a
		case a == "--dry-run" && c.name == "undo":
			c.dryRun = true
		case a == "--force" && c.name == "undo":
			c.force = true
		case a == "--all" && c.name == "gc":
			c.all = true
		case (a == "--keep-last" || strings.HasPrefix(a, "--keep-last=")) && c.name == "gc":
			v, rest2, err := flagValue(a, rest)
			if err != nil {
				return nil, err
			}
			rest = rest2
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, cli.Usagef("gc: --keep-last %s: expected a count", v)
			}
			c.keepLast = &n
		case (a == "--max-size" || strings.HasPrefix(a, "--max-size=")) && c.name == "gc":
			v, rest2, err := flagValue(a, rest)
			if err != nil {
				return nil, err
			}
			rest = rest2
			n, err := parseSize(v)
			if err != nil {
				return nil, cli.Usagef("gc: --max-size %s: %v", v, err)
			}
			c.maxSize = &n
		case a == "--no-durable" && (c.name == "commit" || c.name == "recover" || c.name == "undo"):
			c.opts.Durable = false
		case a == "--state-dir" || strings.HasPrefix(a, "--state-dir="):
			if v, ok := strings.CutPrefix(a, "--state-dir="); ok {
				c.opts.StateDir = v
			} else if len(rest) > 1 {
				c.opts.StateDir, rest = rest[1], rest[1:]
			} else {
				return nil, cli.Usagef("%s: option --state-dir needs a value", c.name)
			}
		case strings.HasPrefix(a, "-"):
			return nil, cli.Usagef("%s: unknown option %s (see txexec --help)", c.name, a)
		case needID && !haveID || c.name == "gc":
			id, err := strconv.ParseInt(a, 10, 64)
			if err != nil || id <= 0 {
				return nil, cli.Usagef("%s: %q is not a %s id", c.name, a, what)
			}
			if c.name == "gc" {
				c.ids = append(c.ids, id)
			} else {
				c.id, haveID = id, true
			}
		default:
			return nil, cli.Usagef("%s: unexpected argument %q", c.name, a)
		}
	}
	if needID && !haveID {
		return nil, cli.Usagef("%s: which %s? (usage: txexec %s ID)", c.name, what, c.name)
	}
	switch {
	case c.name == "replay" && !haveID && c.file == "":
		return nil, cli.Usagef("replay: which recording? (usage: txexec replay ID|FILE)")
	case c.name == "export" && c.output == "":
		c.output = fmt.Sprintf("recording-%d.tar", c.id)
	}
	return c, nil
}

// stateDirOf is the state directory of a run or subcommand: --state-dir,
// else $TXEXEC_STATE_DIR, else the default.
func stateDirOf(o *cli.Run) string {
	if o.StateDir != "" {
		return o.StateDir
	}
	if d := os.Getenv("TXEXEC_STATE_DIR"); d != "" {
		return d
	}
	return defaultStateDir()
}

// beginAttempt begins run attempt (from 0) of a command: a command that
// lost txn.DefaultPriorityAfterN conflicts in a row takes the commit lock
// before it begins, so that it cannot lose again (docs/semantics.md §3).
func beginAttempt(m *txn.Manager, argv []string, cwd string, attempt int) (*txn.Transaction, error) {
	if attempt < txn.DefaultPriorityAfterN {
		return m.Begin(argv, cwd)
	}
	t, err := m.BeginPriority(argv, cwd)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "txexec: transaction %d: the command lost %d conflicts in a row; it holds the commit lock until it ends\n",
		t.ID, attempt)
	return t, nil
}

// keep ends t with --on-exit=keep.
func keep(t *txn.Transaction) error {
	if err := t.Keep(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "txexec: transaction %d kept; finish it with txexec commit %d or txexec abort %d\n", t.ID, t.ID, t.ID)
	return nil
}

// open opens the state directory, finishing interrupted commits first
// unless the subcommand is recover, which reports what it does.
func (c *subcommand) open() (*store.Store, int) {
	var st *store.Store
	var err error
	if c.name == "recover" {
		dir := stateDirOf(&c.opts)
		st, err = store.Open(dir, store.Options{Durable: c.opts.Durable, Owner: selfOwner()})
		if err != nil {
			err = fmt.Errorf("open state directory %s: %w", dir, err)
		}
	} else {
		st, err = openStore(&c.opts)
	}
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return nil, exitInternal
	}
	return st, 0
}

// fail reports err about transaction c.id and returns the exit status.
// verb says what was refused ("committed").
func (c *subcommand) fail(err error, verb string) int {
	var se *store.StateError
	var ce *txn.CommitError
	switch {
	case errors.Is(err, store.ErrNotFound):
		fmt.Fprintf(c.errOut, "txexec: no transaction %d\n", c.id)
		return exitRefused
	case errors.As(err, &se):
		fmt.Fprintf(c.errOut, "txexec: transaction %d is %s; only kept transactions can be %s\n", se.ID, se.State, verb)
		return exitRefused
	case errors.As(err, &ce):
		fmt.Fprintf(c.errOut, "txexec: transaction %d aborted: %v\n", c.id, ce.Err)
		if ce.Conflict {
			return exitConflict
		}
		return exitInternal
	}
	fmt.Fprintf(c.errOut, "txexec: %v\n", err)
	return exitInternal
}

func cmdCommit(c *subcommand) int {
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	m := &txn.Manager{Store: st, Durable: c.opts.Durable}
	if err := m.CommitKept(c.id); err != nil {
		return c.fail(err, "committed")
	}
	fmt.Fprintf(c.errOut, "txexec: transaction %d committed\n", c.id)
	return 0
}

func cmdAbort(c *subcommand) int {
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	m := &txn.Manager{Store: st}
	const why = "aborted with txexec abort"
	if err := m.AbortKept(c.id, why); err != nil {
		return c.fail(err, "aborted")
	}
	fmt.Fprintf(c.errOut, "txexec: transaction %d aborted: %s\n", c.id, why)
	return 0
}

func cmdRecover(c *subcommand) int {
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	finished, aborted, err := txn.Recover(st, c.opts.Durable)
	for _, id := range finished {
		fmt.Fprintf(c.out, "transaction %d: committed; finished writing it through\n", id)
	}
	for _, id := range aborted {
		fmt.Fprintf(c.out, "transaction %d: aborted; its supervisor died before the commit point\n", id)
	}
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: recover: %v\n", err)
		return exitInternal
	}
	if len(finished)+len(aborted) == 0 {
		fmt.Fprintln(c.out, "nothing to recover")
	}
	return 0
}

// logEntry is one transaction in txexec log --json. The field names are
// an interface: add fields, never rename or remove one.
type logEntry struct {
	ID        int64    `json:"id"`
	State     string   `json:"state"`
	When      string   `json:"when"` // the latest of the times below
	Command   []string `json:"command"`
	Cwd       string   `json:"cwd"`
	Status    *int     `json:"status"` // the command's exit status; null if unknown
	Reason    string   `json:"reason"` // why it aborted; "" otherwise
	Seq       int64    `json:"seq"`    // commit sequence number; 0 if not committed
	StartSeq  int64    `json:"start_seq"`
	Begun     string   `json:"begun"`
	Kept      string   `json:"kept,omitempty"`
	Committed string   `json:"committed,omitempty"`
	Applied   string   `json:"applied,omitempty"`
	Aborted   string   `json:"aborted,omitempty"`
	Ops       int      `json:"ops"`
	Writes    int      `json:"writes"`
	Reads     int      `json:"reads"`
	// Run and RunSeq: the txexec parallel run and the command's place in
	// it (from 0), for its transactions only.
	Run    int64 `json:"run,omitempty"`
	RunSeq *int  `json:"run_seq,omitempty"`
	// Undo is what its write-through kept for txexec undo: keep, none or
	// dropped; Undoable says txexec undo can put it back now, UndoBytes
	// the space its before-images held. Undoes and UndoneBy link an undo
	// transaction and the one it undid (0: none).
	Undo      string `json:"undo"`
	Undoable  bool   `json:"undoable"`
	UndoBytes int64  `json:"undo_bytes"`
	Undoes    int64  `json:"undoes"`
	UndoneBy  int64  `json:"undone_by"`
}

func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// when is the time of the latest event of r.
func when(r store.TxRecord) time.Time {
	w := r.Begun
	for _, t := range []time.Time{r.Kept, r.Committed, r.Applied, r.Aborted} {
		if t.After(w) {
			w = t
		}
	}
	return w
}

func cmdLog(c *subcommand) int {
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	var recs []store.TxRecord
	var err error
	if c.run != 0 {
		recs, err = st.RunLog(c.run)
		if errors.Is(err, store.ErrNotFound) {
			fmt.Fprintf(c.errOut, "txexec: no parallel run %d\n", c.run)
			return exitRefused
		}
	} else {
		recs, err = st.Log(0)
	}
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	if c.json {
		entries := make([]logEntry, 0, len(recs))
		for _, r := range recs {
			var runSeq *int
			if r.Run != 0 {
				runSeq = &r.RunSeq
			}
			entries = append(entries, logEntry{
				Run: r.Run, RunSeq: runSeq,
				ID: r.ID, State: string(r.State), When: jsonTime(when(r)), Command: r.Command, Cwd: r.Cwd,
				Status: r.CommandStatus, Reason: r.Reason, Seq: r.Seq, StartSeq: r.StartSeq,
				Begun: jsonTime(r.Begun), Kept: jsonTime(r.Kept), Committed: jsonTime(r.Committed),
				Applied: jsonTime(r.Applied), Aborted: jsonTime(r.Aborted),
				Ops: r.OpN, Writes: r.GranuleN, Reads: r.ReadN,
				Undo: string(r.Undo.State), Undoable: r.Undo.Undoable(r.State), UndoBytes: r.Undo.Bytes,
				Undoes: r.Undo.Undoes, UndoneBy: r.Undo.UndoneBy,
			})
		}
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(entries); err != nil {
			fmt.Fprintf(c.errOut, "txexec: %v\n", err)
			return exitInternal
		}
		return 0
	}
	for _, r := range recs {
		status := "-"
		if r.CommandStatus != nil {
			status = strconv.Itoa(*r.CommandStatus)
		}
		line := fmt.Sprintf("%-6d %-9s %s  status %-3s  %s", r.ID, r.State, when(r).Format("2006-01-02 15:04:05"),
			status, shellQuote(r.Command))
		if r.Run != 0 {
			line += fmt.Sprintf("  [run %d #%d]", r.Run, r.RunSeq)
		}
		if r.Reason != "" {
			line += "  (" + r.Reason + ")"
		}
		if m := undoMark(r); m != "" {
			line += "  [" + m + "]"
		}
		fmt.Fprintln(c.out, line)
	}
	return 0
}

// shellQuote renders argv on one line as a shell would need it typed:
// words with control characters (a script's newlines) in $'...'.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "":
			q[i] = a
		case strings.IndexFunc(a, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0:
			var b strings.Builder
			b.WriteString("$'")
			for _, c := range []byte(a) {
				switch {
				case c == '\\' || c == '\'':
					b.WriteByte('\\')
					b.WriteByte(c)
				case c == '\n':
					b.WriteString(`\n`)
				case c == '\t':
					b.WriteString(`\t`)
				case c < ' ' || c == 0x7f:
					fmt.Fprintf(&b, `\x%02x`, c)
				default:
					b.WriteByte(c)
				}
			}
			b.WriteByte('\'')
			q[i] = b.String()
		default:
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

func cmdShow(c *subcommand) int {
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	r, ops, err := st.Get(c.id)
	if err != nil {
		return c.fail(err, "shown")
	}
	reads, err := st.Reads(c.id)
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	w := c.out
	fmt.Fprintf(w, "transaction %d: %s\n", r.ID, r.State)
	fmt.Fprintf(w, "command:   %s\n", shellQuote(r.Command))
	fmt.Fprintf(w, "cwd:       %s\n", r.Cwd)
	if r.CommandStatus != nil {
		fmt.Fprintf(w, "status:    %d\n", *r.CommandStatus)
	}
	stamp := func(label string, t time.Time, extra string) {
		if !t.IsZero() {
			fmt.Fprintf(w, "%-10s %s%s\n", label+":", t.Format("2006-01-02 15:04:05.000"), extra)
		}
	}
	stamp("begun", r.Begun, fmt.Sprintf(" (snapshot after commit %d)", r.StartSeq))
	stamp("kept", r.Kept, "")
	stamp("committed", r.Committed, fmt.Sprintf(" (commit %d)", r.Seq))
	stamp("applied", r.Applied, "")
	stamp("aborted", r.Aborted, "")
	if r.Reason != "" {
		fmt.Fprintf(w, "reason:    %s\n", r.Reason)
	}
	areas, err := st.StagingAreas(r.ID)
	if err != nil {
		return c.fail(err, "shown")
	}
	changes, diffs := describeOps(ops, reads, r.ReadN > 0, areas)
	switch {
	case len(changes) > 0:
		fmt.Fprintf(w, "changes (%d redo operations, %d paths read):\n", len(ops), len(reads))
		for _, ch := range changes {
			fmt.Fprintf(w, "  %s\n", ch)
		}
	case r.State == store.StateRunning || r.State == store.StateAborted && r.OpN == 0:
		fmt.Fprintln(w, "changes:   none recorded (changes are recorded when a transaction is kept or committed)")
	default:
		fmt.Fprintln(w, "changes:   none")
	}
	if !c.diff {
		return 0
	}
	if r.State == store.StateApplied && r.Undo.State == store.UndoKeep {
		// Written through: against the before-images it kept.
		changed, err := txn.ChangedFiles(st, r.ID, ops)
		if err != nil {
			fmt.Fprintf(c.errOut, "txexec: %v\n", err)
			return exitInternal
		}
		diffs = diffs[:0]
		for _, fc := range changed {
			diffs = append(diffs, fileDiff{path: fc.Path, oldFile: fc.Old, newFile: fc.New})
		}
	} else if why := diffUnavailable(r, areas[0]); why != "" {
		fmt.Fprintf(w, "diff not available: %s\n", why)
		return 0
	}
	for _, ch := range diffs {
		if err := writeFileDiff(w, ch); err != nil {
			fmt.Fprintf(c.errOut, "txexec: diff %s: %v\n", ch.path, err)
			return exitInternal
		}
	}
	return 0
}

// diffUnavailable says why show --diff cannot show r's changes ("" when
// it can): only while its staged data exists, before write-through.
func diffUnavailable(r store.TxRecord, staging string) string {
	switch r.State {
	case store.StateKept, store.StateCommitted:
		if _, err := os.Stat(staging); err != nil {
			return fmt.Sprintf("the staged data of transaction %d is gone", r.ID)
		}
		return ""
	case store.StateRunning:
		return fmt.Sprintf("transaction %d is running; its changes are not recorded yet", r.ID)
	}
	if r.State == store.StateApplied {
		return fmt.Sprintf("transaction %d is applied and kept no before-images (--undo=none, dropped, or undone)", r.ID)
	}
	return fmt.Sprintf("transaction %d is %s; its staged data is gone", r.ID, r.State)
}
