package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/cli"
	"txexec/internal/wrap"
	"txexec/interpose"
)

func TestParseWrap(t *testing.T) {
	cwd, err := os.Getwd()
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		cmd  string
		args []string
		want *wrapLine
	}{
		{"paths", "wrap", []string{"/usr/bin/a", "/usr/bin/b"},
			&wrapLine{name: "wrap", dir: wrap.DefaultDir, paths: []string{"/usr/bin/a", "/usr/bin/b"}}},
		{"run options recorded, values in both forms", "wrap",
			[]string{"--on-exit=abort", "--retry", "3", "--no-durable", "--wrapped-dir", "/w", "/usr/bin/a"},
			&wrapLine{name: "wrap", dir: "/w", options: []string{"--on-exit=abort", "--retry=3", "--no-durable"}, paths: []string{"/usr/bin/a"}}},
		{"list", "wrap", []string{"--list", "--wrapped-dir=/w"}, &wrapLine{name: "wrap", list: true, dir: "/w"}},
		{"directories recorded absolute", "wrap", []string{"--state-dir=s", "--exclude", "/x/../y", "/usr/bin/a"},
			&wrapLine{name: "wrap", dir: wrap.DefaultDir, options: []string{"--state-dir=" + filepath.Join(cwd, "s"), "--exclude=/y"}, paths: []string{"/usr/bin/a"}}},
		{"check", "wrap", []string{"--check"}, &wrapLine{name: "wrap", check: true, dir: wrap.DefaultDir}},
		{"a path after --", "unwrap", []string{"--", "-odd"}, &wrapLine{name: "unwrap", dir: wrap.DefaultDir, paths: []string{"-odd"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWrap(tc.cmd, tc.args)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseWrapRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  string
		args []string
	}{
		{"no path", "wrap", nil},
		{"passthrough would remove the protection", "wrap", []string{"--passthrough", "/a"}},
		{"trace is not recorded", "wrap", []string{"--trace=/x", "/a"}},
		{"a bad value", "wrap", []string{"--on-exit=sometimes", "/a"}},
		{"list with paths", "wrap", []string{"--list", "/a"}},
		{"list and check", "wrap", []string{"--list", "--check"}},
		{"unwrap takes no run options", "unwrap", []string{"--on-exit=abort", "/a"}},
		{"unwrap has no list", "unwrap", []string{"--list"}},
		{"unknown", "wrap", []string{"--frobnicate", "/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseWrap(tc.cmd, tc.args)
			var ue *cli.UsageError
			require.ErrorAs(t, err, &ue)
		})
	}
}

func TestParseWrappedRun(t *testing.T) {
	r, err := parseWrappedRun([]string{"--config=/w/x/wrap.conf", "--env-fd=5", "--caller=1000,100,101",
		"--groups=100,27", "--", "prog", "--on-exit=commit"})
	require.NoError(t, err)
	assert.Equal(t, &wrappedRun{conf: "/w/x/wrap.conf", envFD: 5, ruid: 1000, rgid: 100, egid: 101,
		groups: []uint32{100, 27}, argv: []string{"prog", "--on-exit=commit"}}, r,
		"what follows -- is the program's argv, never txexec's options")

	for _, args := range [][]string{
		{"--config=/c", "--env-fd=5", "--caller=1,2,3", "--groups=", "--"},
		{"--config=/c", "--env-fd=5", "--caller=1,2", "--groups=", "--", "p"},
		{"--config=/c", "--caller=1,2,3", "--groups=", "--", "p"},
		{"--config=/c", "--env-fd=5", "--caller=1,2,3", "--", "p"},
		{"--on-exit=commit", "--config=/c", "--env-fd=5", "--caller=1,2,3", "--groups=", "--", "p"},
	} {
		_, err := parseWrappedRun(args)
		assert.Error(t, err, "%q", args)
	}
}

// TestCredFor: the credentials the kernel gives a caller executing a
// set-ID file (docs/semantics.md §7).
func TestCredFor(t *testing.T) {
	caller := &wrappedRun{ruid: 1000, rgid: 100, egid: 101, groups: []uint32{100, 27}}
	for _, tc := range []struct {
		name string
		conf wrap.Config
		want interpose.Cred
	}{
		{"set-user-ID root", wrap.Config{Mode: 0o4755, UID: 0, GID: 0},
			interpose.Cred{Uid: 1000, Euid: 0, Suid: 0, Gid: 100, Egid: 101, Sgid: 101, Groups: []uint32{100, 27}}},
		{"set-user-ID of another user", wrap.Config{Mode: 0o4755, UID: 5, GID: 60},
			interpose.Cred{Uid: 1000, Euid: 5, Suid: 5, Gid: 100, Egid: 101, Sgid: 101, Groups: []uint32{100, 27}}},
		{"set-group-ID", wrap.Config{Mode: 0o2755, UID: 0, GID: 42},
			interpose.Cred{Uid: 1000, Euid: 1000, Suid: 1000, Gid: 100, Egid: 42, Sgid: 42, Groups: []uint32{100, 27}}},
		{"both", wrap.Config{Mode: 0o6755, UID: 0, GID: 42},
			interpose.Cred{Uid: 1000, Euid: 0, Suid: 0, Gid: 100, Egid: 42, Sgid: 42, Groups: []uint32{100, 27}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, &tc.want, credFor(&tc.conf, caller))
		})
	}
}
