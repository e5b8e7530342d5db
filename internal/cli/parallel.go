package cli

import (
	"slices"

	"txexec/txn"
)

// CommandSeparator separates the commands of txexec parallel given on its
// command line, as GNU parallel's ::: does.
const CommandSeparator = ":::"

// Parallel is the parsed command line of txexec parallel: "[options] [--
// COMMAND [ARG...] ::: COMMAND [ARG...] ...]".
type Parallel struct {
	// Run holds every option: a run's (Options) and parallel's own
	// (ParallelOptions).
	Run *Run
	// ChildArgs are the run options as given, to pass on to the txexec
	// of each command; --retry is parallel's (its re-runs), not theirs.
	ChildArgs []string
	// Commands are those of the command line; nil when they are to be
	// read from standard input, one shell command line each.
	Commands [][]string
}

// ParseParallel parses txexec parallel's arguments (after the word
// parallel). Options that make no sense for commands committed in order
// are refused: --on-exit=keep (nothing would commit), --passthrough and
// --in-program (no transaction to order); so are --deterministic,
// --record and --repeat, not supported there.
func ParseParallel(args []string) (*Parallel, error) {
	table := append(slices.Clone(Options), ParallelOptions...)
	words := map[string][]string{}
	r, rest, err := parseOptions(args, table, words)
	if err != nil {
		return nil, err
	}
	if err := checkCombinations(r); err != nil {
		return nil, err
	}
	switch {
	case r.OnExit == txn.OnExitKeep:
		return nil, Usagef("parallel: --on-exit=keep: commands committed in order cannot be kept")
	case r.Passthrough:
		return nil, Usagef("parallel: --passthrough or --in-program: there is no transaction around each command to commit in order")
	case r.Deterministic || r.Record || r.Repeat > 0:
		return nil, Usagef("parallel: --deterministic, --record and --repeat are not supported with txexec parallel")
	}
	p := &Parallel{Run: r}
	for i := range Options {
		name := Options[i].Name
		if name == "retry" || name == "help" || name == "version" {
			continue
		}
		p.ChildArgs = append(p.ChildArgs, words[name]...)
	}
	if len(rest) == 0 {
		return p, nil
	}
	var cur []string
	for _, w := range append(rest, CommandSeparator) {
		if w != CommandSeparator {
			cur = append(cur, w)
			continue
		}
		if len(cur) == 0 {
			return nil, Usagef("parallel: an empty command between %s separators", CommandSeparator)
		}
		p.Commands = append(p.Commands, cur)
		cur = nil
	}
	return p, nil
}
