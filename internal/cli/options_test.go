package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/signals"
	"txexec/syscalls"
	"txexec/txn"
)

// TestParse: each option in its spellings, and where the options end.
func TestParse(t *testing.T) {
	with := func(f func(r *Run)) Run {
		r := Defaults()
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		args []string
		want Run
	}{
		{"defaults", []string{"--", "true"}, with(func(r *Run) { r.Argv = []string{"true"} })},
		{"no --", []string{"true", "--on-exit=abort"}, with(func(r *Run) { r.Argv = []string{"true", "--on-exit=abort"} })},
		{"on-exit with =", []string{"--on-exit=keep", "--", "x"}, with(func(r *Run) { r.OnExit = txn.OnExitKeep; r.Argv = []string{"x"} })},
		{"on-exit as two words", []string{"--on-exit", "abort", "x"}, with(func(r *Run) { r.OnExit = txn.OnExitAbort; r.Argv = []string{"x"} })},
		{"retry", []string{"--retry", "3", "--", "x"}, with(func(r *Run) { r.Retry = 3; r.Argv = []string{"x"} })},
		{"no-durable", []string{"--no-durable", "x"}, with(func(r *Run) { r.Durable = false; r.Argv = []string{"x"} })},
		{"unsupported", []string{"--unsupported=allow", "x"}, with(func(r *Run) { r.Unsupported = syscalls.PolicyAllow; r.Argv = []string{"x"} })},
		{"unsupported error", []string{"--unsupported", "error", "x"}, with(func(r *Run) { r.Unsupported = syscalls.PolicyError; r.Argv = []string{"x"} })},
		{"output", []string{"--output=defer", "x"}, with(func(r *Run) { r.Output = OutputDefer; r.Argv = []string{"x"} })},
		{"signals", []string{"--signals=immediate", "x"}, with(func(r *Run) { r.Signals = signals.Immediate; r.Argv = []string{"x"} })},
		{"excludes repeat", []string{"--exclude", "/a", "--exclude=/b", "x"}, with(func(r *Run) { r.Excludes = []string{"/a", "/b"}; r.Argv = []string{"x"} })},
		{"passthrough", []string{"--passthrough", "x"}, with(func(r *Run) { r.Passthrough = true; r.Argv = []string{"x"} })},
		{"in-program, an alias of passthrough", []string{"--in-program", "x"}, with(func(r *Run) { r.Passthrough, r.InProgram, r.FastLookups = true, true, false; r.Argv = []string{"x"} })},
		{"fast lookups", []string{"--passthrough", "--fast-lookups", "x"}, with(func(r *Run) { r.Passthrough, r.FastLookupsAsked = true, true; r.Argv = []string{"x"} })},
		{"fast lookups in a transaction", []string{"--fast-lookups", "x"}, with(func(r *Run) { r.FastLookupsAsked = true; r.Argv = []string{"x"} })},
		{"no fast lookups", []string{"--no-fast-lookups", "x"}, with(func(r *Run) { r.FastLookups = false; r.Argv = []string{"x"} })},
		{"the last of the two wins", []string{"--no-fast-lookups", "--fast-lookups", "x"}, with(func(r *Run) { r.FastLookupsAsked = true; r.Argv = []string{"x"} })},
		{"and the other way", []string{"--fast-lookups", "--no-fast-lookups", "x"}, with(func(r *Run) { r.FastLookups = false; r.Argv = []string{"x"} })},
		{"no fast lookups by default with --trace", []string{"--trace", "--passthrough", "x"}, with(func(r *Run) {
			r.Trace, r.Passthrough, r.FastLookups = true, true, false
			r.Argv = []string{"x"}
		})},
		{"trace to stderr", []string{"--trace", "x"}, with(func(r *Run) { r.Trace, r.FastLookups = true, false; r.Argv = []string{"x"} })},
		{"trace to a file", []string{"--trace=/t", "x"}, with(func(r *Run) { r.Trace, r.TraceFile, r.FastLookups = true, "/t", false; r.Argv = []string{"x"} })},
		{"state-dir", []string{"--state-dir", "/s", "x"}, with(func(r *Run) { r.StateDir = "/s"; r.Argv = []string{"x"} })},
		{"help without a command", []string{"--help"}, with(func(r *Run) { r.Help = true; r.Argv = []string{} })},
		{"-h after options", []string{"--retry", "1", "-h"}, with(func(r *Run) { r.Retry, r.Help = 1, true; r.Argv = []string{} })},
		{"version", []string{"--version"}, with(func(r *Run) { r.Version = true; r.Argv = []string{} })},
		{"a one-dash word is the command", []string{"-x"}, with(func(r *Run) { r.Argv = []string{"-x"} })},
		{"-- then an option-like command", []string{"--", "--help"}, with(func(r *Run) { r.Argv = []string{"--help"} })},
		{"deterministic", []string{"--deterministic", "x"}, with(func(r *Run) { r.Deterministic, r.FastLookups = true, false; r.Argv = []string{"x"} })},
		{"deterministic with a seed", []string{"--deterministic=42", "x"}, with(func(r *Run) { r.Deterministic, r.Seed, r.FastLookups = true, 42, false; r.Argv = []string{"x"} })},
		{"repeat", []string{"--deterministic", "--repeat", "3", "--vary-seed", "x"}, with(func(r *Run) {
			r.Deterministic, r.Repeat, r.VarySeed, r.FastLookups = true, 3, true, false
			r.Argv = []string{"x"}
		})},
		{"record is deterministic", []string{"--record", "--deterministic=7", "x"}, with(func(r *Run) {
			r.Record, r.Deterministic, r.Seed, r.FastLookups = true, true, 7, false
			r.Argv = []string{"x"}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.args)
			require.NoError(t, err)
			assert.Equal(t, tc.want, *got)
		})
	}
}

// TestParseErrors: one line each, naming the option.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--on-exit=sometimes", "x"}, "--on-exit=sometimes: expected one of success, commit, abort, keep"},
		{[]string{"--output", "later", "x"}, "--output=later: expected one of live, defer"},
		{[]string{"--signals=never", "x"}, "--signals=never: expected one of defer, immediate"},
		{[]string{"--unsupported=ignore", "x"}, "--unsupported=ignore: expected one of abort, error, allow"},
		{[]string{"--retry", "-1", "x"}, "--retry -1: expected a count"},
		{[]string{"--retry", "many", "x"}, "--retry many: expected a count"},
		{[]string{"--retry"}, "option --retry needs a value"},
		{[]string{"--no-durable=yes", "x"}, "option --no-durable takes no value"},
		{[]string{"--frobnicate", "x"}, "unknown option --frobnicate (see txexec --help)"},
		{[]string{"--no-durable"}, "no command given (usage: txexec [options] -- COMMAND [ARG...])"},
		{[]string{"--"}, "no command given (usage: txexec [options] -- COMMAND [ARG...])"},
		{[]string{"--deterministic=x", "y"}, `--deterministic=x: seed "x": expected a decimal number below 2^64`},
		{[]string{"--deterministic", "--repeat", "0", "y"}, "--repeat 0: expected a count of at least 1"},
		{[]string{"--repeat", "2", "y"}, "--repeat needs --deterministic"},
		{[]string{"--deterministic", "--vary-seed", "y"}, "--vary-seed needs --repeat"},
		{[]string{"--deterministic", "--passthrough", "y"}, "--deterministic needs a transaction around the command; it cannot be combined with --passthrough or --in-program"},
		{[]string{"--record", "--passthrough", "y"}, "--deterministic needs a transaction around the command; it cannot be combined with --passthrough or --in-program"},
		{[]string{"--deterministic", "--repeat", "2", "--on-exit=commit", "y"}, "--repeat aborts every run; it cannot be combined with --on-exit"},
		{[]string{"--fast-lookups", "--in-program", "y"}, "--fast-lookups cannot be combined with --in-program (a thread's own transaction must see its lookups)"},
		{[]string{"--fast-lookups", "--deterministic", "y"}, "--fast-lookups cannot be combined with --deterministic (the fast path answers with the host's times and inode numbers)"},
		{[]string{"--fast-lookups", "--passthrough", "--trace", "y"}, "--fast-lookups cannot be combined with --trace (the calls it makes natively would be missing from the trace)"},
		{[]string{"--record", "--repeat", "2", "y"}, "--repeat and --record cannot be combined"},
		{[]string{"--record", "--output=defer", "y"}, "--output=defer cannot be combined with --repeat or --record, which capture the output"},
	} {
		_, err := Parse(tc.args)
		require.Error(t, err, tc.args)
		assert.Equal(t, tc.err, err.Error(), tc.args)
		var ue *UsageError
		assert.ErrorAs(t, err, &ue, tc.args)
	}
}

// TestTablesAreWellFormed: what the generators and the parser rely on.
func TestTablesAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Options {
		assert.False(t, seen[o.Name], "--%s twice", o.Name)
		seen[o.Name] = true
		assert.NotEmpty(t, o.Help, o.Name)
		assert.NotEmpty(t, o.Doc, o.Name)
		assert.NotNil(t, o.set, o.Name)
		if o.Kind != NoValue && o.Choices == nil {
			assert.NotEmpty(t, o.Arg, "--%s takes a value: name it", o.Name)
		}
		if o.Choices != nil {
			assert.Equal(t, RequiredValue, o.Kind, o.Name)
			assert.Contains(t, o.Choices, o.Default, "--%s: its default is one of its values", o.Name)
		}
	}
	for _, c := range Subcommands {
		assert.NotEmpty(t, c.Help, c.Name)
	}
}

// TestEnumNames: the names the table accepts are those of the values the
// rest of txexec switches on.
func TestEnumNames(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want func(r *Run) bool
	}{
		{"--unsupported=abort", func(r *Run) bool { return r.Unsupported == syscalls.PolicyAbort }},
		{"--unsupported=error", func(r *Run) bool { return r.Unsupported == syscalls.PolicyError }},
		{"--unsupported=allow", func(r *Run) bool { return r.Unsupported == syscalls.PolicyAllow }},
		{"--signals=defer", func(r *Run) bool { return r.Signals == signals.Defer }},
		{"--signals=immediate", func(r *Run) bool { return r.Signals == signals.Immediate }},
		{"--output=live", func(r *Run) bool { return r.Output == OutputLive }},
		{"--output=defer", func(r *Run) bool { return r.Output == OutputDefer }},
		{"--on-exit=success", func(r *Run) bool { return r.OnExit == txn.OnExitSuccess }},
		{"--on-exit=commit", func(r *Run) bool { return r.OnExit == txn.OnExitCommit }},
	} {
		r, err := Parse([]string{tc.arg, "x"})
		require.NoError(t, err)
		assert.True(t, tc.want(r), tc.arg)
	}
}

// TestUsage: --help lists every option and subcommand, and ends its last
// line.
func TestUsage(t *testing.T) {
	u := Usage()
	assert.True(t, strings.HasSuffix(u, "\n"))
	for _, o := range Options {
		assert.Contains(t, u, "\n  "+o.Synopsis()+" ")
	}
	for _, c := range Subcommands {
		assert.Contains(t, u, "\n  "+c.Name)
	}
}
