package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/cli"
	"txexec/store"
)

func TestParseSubcommand(t *testing.T) {
	durable := cli.Run{Durable: true}
	tests := []struct {
		args    []string
		want    subcommand
		wantErr string
	}{
		{args: []string{"log"}, want: subcommand{name: "log", opts: durable}},
		{args: []string{"log", "--json"}, want: subcommand{name: "log", json: true, opts: durable}},
		{args: []string{"show", "12", "--diff"}, want: subcommand{name: "show", id: 12, diff: true, opts: durable}},
		{args: []string{"show", "--diff", "12"}, want: subcommand{name: "show", id: 12, diff: true, opts: durable}},
		{args: []string{"commit", "3", "--no-durable"}, want: subcommand{name: "commit", id: 3, opts: cli.Run{}}},
		{args: []string{"abort", "3", "--state-dir", "/s"}, want: subcommand{name: "abort", id: 3, opts: cli.Run{Durable: true, StateDir: "/s"}}},
		{args: []string{"recover", "--state-dir=/s"}, want: subcommand{name: "recover", opts: cli.Run{Durable: true, StateDir: "/s"}}},
		{args: []string{"show"}, wantErr: "show: which transaction? (usage: txexec show ID)"},
		{args: []string{"show", "x"}, wantErr: `show: "x" is not a transaction id`},
		{args: []string{"show", "0"}, wantErr: `show: "0" is not a transaction id`},
		{args: []string{"show", "1", "2"}, wantErr: `show: unexpected argument "2"`},
		{args: []string{"log", "7"}, wantErr: `log: unexpected argument "7"`},
		{args: []string{"log", "--diff"}, wantErr: "log: unknown option --diff (see txexec --help)"},
		{args: []string{"commit", "1", "--json"}, wantErr: "commit: unknown option --json (see txexec --help)"},
		{args: []string{"recover", "--state-dir"}, wantErr: "recover: option --state-dir needs a value"},
		{args: []string{"replay", "4", "--diff"}, want: subcommand{name: "replay", id: 4, diff: true, opts: durable}},
		{args: []string{"replay", "--commit", "4"}, want: subcommand{name: "replay", id: 4, commit: true, opts: durable}},
		{args: []string{"show", "4", "--commit"}, wantErr: "show: unknown option --commit (see txexec --help)"},
		{args: []string{"replay", "/no/such/rec.tar"}, want: subcommand{name: "replay", file: "/no/such/rec.tar", opts: durable}},
		{args: []string{"replay"}, wantErr: "replay: which recording? (usage: txexec replay ID|FILE)"},
		{args: []string{"replay", "1", "2"}, wantErr: `replay: unexpected argument "2"`},
		{args: []string{"export", "2", "-o", "/r.tar"}, want: subcommand{name: "export", id: 2, output: "/r.tar", opts: durable}},
		{args: []string{"export", "2"}, want: subcommand{name: "export", id: 2, output: "recording-2.tar", opts: durable}},
		{args: []string{"export", "-o", "/r.tar"}, wantErr: "export: which recording? (usage: txexec export ID)"},
		{args: []string{"export", "x", "-o", "f"}, wantErr: `export: "x" is not a recording id`},
		{args: []string{"export", "2", "-o"}, wantErr: "export: -o needs a file"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseSubcommand(tt.args)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, &tt.want, got)
		})
	}
}

func TestRunSubcommandLeavesCommandsAlone(t *testing.T) {
	for _, args := range [][]string{nil, {"--", "log"}, {"ls", "-l"}, {"--retry", "3", "--", "show"},
		{"--state-dir", "/s", "--", "log"}, {"--state-dir=/s", "ls"}, {"--state-dir", "log"}} {
		_, ok := runSubcommand(args)
		assert.False(t, ok, "%q", args)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"make", "install", "DESTDIR=/x"}, "make install DESTDIR=/x"},
		{[]string{"sh", "-c", "echo hi > f"}, "sh -c 'echo hi > f'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"sh", "-c", "a\nb 'q'\t\\"}, `sh -c $'a\nb \'q\'\t\\'`},
		{[]string{"x\x01"}, `$'x\x01'`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, shellQuote(tt.argv), "%q", tt.argv)
	}
}

func TestUnifiedHunks(t *testing.T) {
	lines := func(s string) []string { return splitLines([]byte(s)) }
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{"identical", "a\nb\n", "a\nb\n", ""},
		{"create", "", "x\ny\n", "@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"remove all", "x\n", "", "@@ -1 +0,0 @@\n-x\n"},
		{"change in the middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n",
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "ONE\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nTWELVE\n",
			"@@ -1,4 +1,4 @@\n-1\n+ONE\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+TWELVE\n"},
		{"close changes share a hunk", "1\n2\n3\n4\n5\n6\n7\n", "ONE\n2\n3\n4\n5\n6\nSEVEN\n",
			"@@ -1,7 +1,7 @@\n-1\n+ONE\n 2\n 3\n 4\n 5\n 6\n-7\n+SEVEN\n"},
		{"no newline at the end", "a\nb", "a\nc", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"insert", "a\nc\n", "a\nb\nc\n", "@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, unifiedHunks(lines(tt.a), lines(tt.b), 3))
		})
	}
}

// patch applies unified hunks to a, checking every context and removed
// line against a; it is the inverse that makes the diff trustworthy.
func patch(t *testing.T, a []string, hunks string) []string {
	t.Helper()
	header := regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)
	var out []string
	pos := 0 // next line of a not yet copied
	hl := strings.SplitAfter(hunks, "\n")
	for i := 0; i < len(hl) && hl[i] != ""; {
		m := header.FindStringSubmatch(strings.TrimSuffix(hl[i], "\n"))
		require.NotNil(t, m, "hunk header %q", hl[i])
		start, _ := strconv.Atoi(m[1])
		n := 1
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		if n > 0 {
			start-- // 1-based, except for an empty range
		}
		require.GreaterOrEqual(t, start, pos)
		out = append(out, a[pos:start]...)
		pos = start
		for i++; i < len(hl) && hl[i] != "" && !strings.HasPrefix(hl[i], "@@"); i++ {
			l := hl[i][1:]
			if i+1 < len(hl) && strings.HasPrefix(hl[i+1], `\ No newline`) {
				l = strings.TrimSuffix(l, "\n")
			}
			switch hl[i][0] {
			case ' ':
				require.Equal(t, a[pos], l)
				out = append(out, l)
				pos++
			case '-':
				require.Equal(t, a[pos], l)
				pos++
			case '+':
				out = append(out, l)
			case '\\':
			default:
				t.Fatalf("bad hunk line %q", hl[i])
			}
		}
	}
	return append(out, a[pos:]...)
}

func TestUnifiedHunksApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a\n", "b\n", "c\n", "d\n", "e\n"}
	for trial := range 500 {
		gen := func() []string {
			n := rng.IntN(30)
			out := make([]string, n)
			for i := range out {
				out[i] = words[rng.IntN(len(words))]
			}
			return out
		}
		a, b := gen(), gen()
		got := patch(t, a, unifiedHunks(a, b, 3))
		if !assert.Equal(t, strings.Join(b, ""), strings.Join(got, ""), "trial %d", trial) {
			return
		}
	}
}

func TestDescribeOps(t *testing.T) {
	staging := t.TempDir()
	stagedFile := filepath.Join(staging, "1")
	require.NoError(t, os.WriteFile(stagedFile, []byte("new\n"), 0o644))
	stagedDir := filepath.Join(staging, "2")
	require.NoError(t, os.Mkdir(stagedDir, 0o755))
	stagedLink := filepath.Join(staging, "3")
	require.NoError(t, os.Symlink("target", stagedLink))
	host := t.TempDir()
	old := filepath.Join(host, "old")
	require.NoError(t, os.WriteFile(old, []byte("old\n"), 0o644))
	h := func(name string) string { return filepath.Join(host, name) }

	ops := []store.RedoOp{
		{Kind: store.OpRename, Src: stagedFile, Path: h("old"), Ino: 1},
		{Kind: store.OpRename, Src: stagedDir, Path: h("dir"), Ino: 2},
		{Kind: store.OpRename, Src: stagedLink, Path: h("link"), Ino: 3},
		{Kind: store.OpRename, Src: h("a"), Path: h("b"), Ino: 4},
		{Kind: store.OpUnlink, Path: h("gone"), Ino: 5},
		{Kind: store.OpRmdir, Path: h("emptied"), Ino: 6},
		{Kind: store.OpSetattr, Path: h("dir2"), Ino: 7, Attrs: store.AttrMode | store.AttrUID | store.AttrGID, Mode: 0o2750, UID: 0, GID: 50},
		{Kind: store.OpSetattr, Path: h("dir3"), Ino: 8, Attrs: store.AttrMtime, Mtime: store.Timespec{Sec: 1_000_000_000}},
		{Kind: store.OpLink, Src: h("b"), Path: h("b2"), Ino: 4},
		{Kind: store.OpExchange, Src: h("x"), Path: h("y"), Ino: 9, Ino2: 10},
		{Kind: store.OpCopyData, Src: stagedFile, Path: h("hl"), Ino: 11},
		{Kind: store.OpFsyncDir, Path: host},
	}
	reads := []store.ReadRecord{
		{Path: h("old"), Exists: true}, {Path: h("dir")}, {Path: h("link")}, {Path: h("a"), Exists: true},
		{Path: h("gone"), Exists: true}, {Path: h("hl"), Exists: true},
	}
	lines, diffs := describeOps(ops, reads, true, []string{t.TempDir(), staging})
	assert.Equal(t, []string{
		"replace " + h("old"),
		"mkdir " + h("dir"),
		"create symlink " + h("link") + " -> target",
		"rename " + h("a") + " -> " + h("b"),
		"remove " + h("gone"),
		"rmdir " + h("emptied"),
		"chown 0:50 " + h("dir2"),
		"chmod 2750 " + h("dir2"),
		"set mtime 2001-09-09T01:46:40.000000000Z " + h("dir3"),
		"link " + h("b2") + " -> " + h("b"),
		"exchange " + h("x") + " <-> " + h("y"),
		"write " + h("hl") + " (in place: it has other hard links)",
	}, lines)
	// Diffs: only where a regular file's contents were replaced or
	// removed; the file removed is gone from the host in this test, so
	// only the replaced one is regular on both sides.
	var paths []string
	for _, d := range diffs {
		paths = append(paths, fmt.Sprintf("%s: %s -> %s", filepath.Base(d.path), d.oldFile, d.newFile))
	}
	assert.Equal(t, []string{"old: " + old + " -> " + stagedFile}, paths)
}

// TestDescribeOpCoversEveryKind: show can word every kind of redo op
// store knows, and knows no kind store does not.
func TestDescribeOpCoversEveryKind(t *testing.T) {
	for _, k := range store.OpKinds {
		assert.Contains(t, describeOp, k, "show cannot describe redo op kind %q", k)
	}
	assert.Len(t, describeOp, len(store.OpKinds))
}
