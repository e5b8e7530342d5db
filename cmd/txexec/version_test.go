package main

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"txexec/internal/cli"
)

func TestVersionFromBuildInfo(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"go install of a tagged module", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"go build in a clean checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "false")}, "devel-0123456789ab"},
		{"go build with changes", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "true")}, "devel-0123456789ab-dirty"},
		{"no VCS information", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		assert.Equal(t, tc.want, fromBuildInfo(&tc.info), tc.name)
	}
}

// TestSubcommandTable: the subcommands help and completion list are those
// runSubcommand (or, for wrap and unwrap, cmdWrap; for parallel,
// runParallelIfAsked) runs, each accepting the flags listed for it: after
// its arguments, alone (wrap --list) or with a value (--wrapped-dir=DIR,
// or the value a flag is listed with: log --run ID).
func TestSubcommandTable(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range cli.Subcommands {
		listed[c.Name] = true
		parse := func(args ...string) error { _, err := parseSubcommand(args); return err }
		switch {
		case wrapSubcommands[c.Name]:
			parse = func(args ...string) error { _, err := parseWrap(args[0], args[1:]); return err }
		case c.Name == "parallel":
			parse = func(args ...string) error { _, err := cli.ParseParallel(args[1:]); return err }
		default:
			assert.NotNil(t, subcommands[c.Name], c.Name)
		}
		args := []string{c.Name}
		if c.Args != "" && c.Name != "parallel" {
			args = append(args, "1")
		}
		flags := c.Flags
		if !c.NoStateDir {
			flags = append(flags, "--state-dir=/s")
		}
		for _, f := range flags {
			words := strings.Fields(f) // "-o FILE": two words
			for i := 1; i < len(words); i++ {
				words[i] = "1" // a value for the placeholder: FILE, ID, N
			}
			ok := parse(append(args, words...)...) == nil || parse(append([]string{c.Name}, words...)...) == nil || parse(append(args, f+"=/s")...) == nil
			assert.True(t, ok, "%s %s", c.Name, f)
		}
	}
	for name := range subcommands {
		assert.True(t, listed[name], "subcommand %s missing from cli.Subcommands", name)
	}
	for name := range wrapSubcommands {
		assert.True(t, listed[name], "subcommand %s missing from cli.Subcommands", name)
	}
}
