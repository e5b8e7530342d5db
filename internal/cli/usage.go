package cli

import (
	"fmt"
	"strings"
)

// Subcommand is a word that, first on the command line, names a subcommand
// instead of a command to run (cmd/txexec parses and runs them).
type Subcommand struct {
	Name  string
	Args  string   // positional arguments, for help
	Flags []string // its own flags (--state-dir DIR too, unless NoStateDir)
	Help  string
	// NoStateDir: it works on no state directory (unwrap: the wrapped
	// program's configuration names the one its runs use).
	NoStateDir bool
}

// Subcommands are txexec's subcommands, in the order help lists them.
var Subcommands = []Subcommand{
	{Name: "log", Flags: []string{"--json", "--run ID"}, Help: "transactions, newest first; --run ID: those of one txexec parallel run, in its order"},
	{Name: "show", Args: "ID", Flags: []string{"--diff"}, Help: "what a transaction changed"},
	{Name: "commit", Args: "ID", Flags: []string{"--no-durable"}, Help: "commit a kept transaction (re-validated first)"},
	{Name: "abort", Args: "ID", Help: "discard a kept transaction"},
	{Name: "recover", Flags: []string{"--no-durable"}, Help: "finish interrupted commits (also done at every start)"},
	{Name: "wrap", Args: "PATH...", Flags: []string{"--list", "--check", "--wrapped-dir DIR"},
		Help: "protect set-ID programs and programs with file capabilities: whoever runs one, it runs in a transaction"},
	{Name: "unwrap", Args: "PATH...", Flags: []string{"--wrapped-dir DIR"}, NoStateDir: true, Help: "put wrapped programs back as they were"},
	{Name: "replay", Args: "ID|FILE", Flags: []string{"--diff", "--commit"}, Help: "run a recording (--record) again from what it read; compare"},
	{Name: "export", Args: "ID", Flags: []string{"-o FILE"}, Help: "write a recording to one file (recording-ID.tar), for replay FILE"},
	{Name: "parallel", Flags: []string{"--jobs N", "--keep-going", "--json"},
		Help: "run the commands of stdin (one a line) or after -- (separated by :::) side by side, each a transaction, committed in input order with a serial run's result; takes a run's options too"},
	{Name: "undo", Args: "ID", Flags: []string{"--dry-run", "--force", "--no-durable"},
		Help: "put back what a transaction changed, as a new transaction (75 if its paths changed since)"},
	{Name: "gc", Args: "[ID...]", Flags: []string{"--all", "--keep-last N", "--max-size SIZE"},
		Help: "drop before-images beyond retention, of ID, or --all; store retention (default 50, 1G)"},
}

// Summary is what txexec does, in one sentence.
const Summary = "Runs COMMAND and everything it starts as one file-system transaction."

// Synopsis is how an option is written: --name, --name ARG,
// --name=a|b|c or --name[=ARG], with its short form first.
func (o *Option) Synopsis() string {
	s := "--" + o.Name
	switch {
	case o.Choices != nil:
		s += "=" + strings.Join(o.Choices, "|")
	case o.Kind == RequiredValue:
		s += " " + o.Arg
	case o.Kind == OptionalValue:
		s += "[=" + o.Arg + "]"
	}
	if o.Short != "" {
		s = "-" + o.Short + ", " + s
	}
	return s
}

// synopsis is how a subcommand is written: name, arguments, [flags].
func (c *Subcommand) synopsis() string {
	s := c.Name
	if c.Args != "" {
		s += " " + c.Args
	}
	for _, f := range c.Flags {
		s += " [" + f + "]"
	}
	return s
}

// Usage is the text of txexec --help.
func Usage() string {
	var b strings.Builder
	b.WriteString("usage: txexec [options] -- COMMAND [ARG...]\n")
	b.WriteString("       txexec [--state-dir DIR] SUBCOMMAND\n\n")
	b.WriteString(Summary + "\n\noptions:\n")
	const width = 38
	for i := range Options {
		o := &Options[i]
		help := o.Help
		if o.Env != "" {
			help += " (or $" + o.Env + ")"
		}
		fmt.Fprintf(&b, "  %-*s%s\n", width, o.Synopsis(), help)
	}
	b.WriteString("\nparallel options (txexec parallel also takes the options above):\n")
	for i := range ParallelOptions {
		o := &ParallelOptions[i]
		fmt.Fprintf(&b, "  %-*s%s\n", width, o.Synopsis(), o.Help)
	}
	b.WriteString("\nsubcommands:\n")
	for i := range Subcommands {
		syn := Subcommands[i].synopsis()
		if len(syn) >= width {
			// Too long for the column: the help goes below it.
			fmt.Fprintf(&b, "  %s\n  %-*s", syn, width, "")
		} else {
			fmt.Fprintf(&b, "  %-*s", width, syn)
		}
		fmt.Fprintf(&b, "%s\n", Subcommands[i].Help)
	}
	return b.String()
}
