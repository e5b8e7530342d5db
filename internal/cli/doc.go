// Package cli is txexec's command line: one table of options (Options)
// and one of subcommands (Subcommands) from which the parser of a run's
// command line (Parse), the --help text (Usage), the bash completion
// (BashCompletion) and the man page docs/txexec.1 (Man) are all derived,
// so that none of them can disagree with another.
//
// cmd/gentxexecdocs writes the completion script and the man page from
// the tables; TestGeneratedFilesAreCurrent fails while they are stale.
//
// It holds no behaviour of a run: what a policy means is txn's (Settle),
// syscalls' (Policy) or cmd/txexec's; this package only names and parses.
package cli

// Where cmd/gentxexecdocs writes the generated files, relative to the
// repository root.
const (
	ManPath        = "docs/txexec.1"
	CompletionPath = "docs/txexec.bash"
)
