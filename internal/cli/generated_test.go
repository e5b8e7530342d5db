package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const regenerate = "run: go run ./cmd/gentxexecdocs (or make docs)"

// TestGeneratedFilesAreCurrent is the golden test of the man page and the
// bash completion: they must be what the tables give now.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	for _, f := range []struct{ path, want string }{
		{ManPath, Man()},
		{CompletionPath, BashCompletion()},
	} {
		got, err := os.ReadFile(filepath.Join("..", "..", f.path))
		require.NoError(t, err, "%s is missing: %s", f.path, regenerate)
		if string(got) != f.want {
			g, w := strings.Split(string(got), "\n"), strings.Split(f.want, "\n")
			for i := 0; i < max(len(g), len(w)); i++ {
				gl, wl := "", ""
				if i < len(g) {
					gl = g[i]
				}
				if i < len(w) {
					wl = w[i]
				}
				if gl != wl {
					t.Fatalf("%s is stale (%s); first difference at line %d:\n  file:   %q\n  tables: %q", f.path, regenerate, i+1, gl, wl)
				}
			}
		}
	}
}

// TestManPageRenders: groff formats the page without a warning, and the
// rendered page names every option.
func TestManPageRenders(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("groff not installed")
	}
	// -P-cbou: plain text, no overstrike for bold and underline.
	cmd := exec.Command("groff", "-man", "-ww", "-Tutf8", "-P-cbou")
	cmd.Stdin = strings.NewReader(Man())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	assert.Empty(t, stderr.String())
	// groff may typeset "-" as U+2010 or U+2212 in UTF-8: compare letters.
	text := strings.NewReplacer("\u2010", "-", "\u2212", "-").Replace(string(out))
	for _, o := range Options {
		assert.True(t, strings.Contains(text, "--"+o.Name), "the man page names --%s", o.Name)
	}
	for _, c := range Subcommands {
		assert.True(t, strings.Contains(text, "\n       "+c.Name), "the man page names %s", c.Name)
	}
}

// TestBashCompletion runs the completion function in bash for command
// lines typed so far, and checks what it offers.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sfile"), nil, 0o644))
	for _, tc := range []struct {
		name  string
		words []string // the last one is being completed
		want  []string // exactly these, or with some: these among others
		some  bool
	}{
		{"option names", []string{"txexec", "--on"}, []string{"--on-exit="}, false},
		{"options with a prefix", []string{"txexec", "--s"}, []string{"--signals=", "--state-dir"}, false},
		{"short and long help", []string{"txexec", "-"}, []string{"-h", "--help", "--version", "--retry"}, true},
		{"choices after = split off", []string{"txexec", "--on-exit", "=", ""}, []string{"success", "commit", "abort", "keep"}, false},
		{"choice prefix after = split off", []string{"txexec", "--output", "=", "d"}, []string{"defer"}, false},
		{"choices after =, one word", []string{"txexec", "--signals=i"}, []string{"--signals=immediate"}, false},
		{"choices as the next word", []string{"txexec", "--unsupported", "a"}, []string{"abort", "allow"}, false},
		{"directories for --state-dir", []string{"txexec", "--state-dir", dir + "/s"}, []string{dir + "/sub"}, false},
		{"directories for --exclude after options", []string{"txexec", "--on-exit=keep", "--exclude", dir + "/s"}, []string{dir + "/sub"}, false},
		{"files for --trace=", []string{"txexec", "--trace", "=", dir + "/sf"}, []string{dir + "/sfile"}, false},
		{"nothing for a count", []string{"txexec", "--retry", ""}, nil, false},
		{"subcommands first", []string{"txexec", "reco"}, []string{"recover"}, true},
		{"subcommands after --state-dir", []string{"txexec", "--state-dir", "/s", "sho"}, []string{"show"}, true},
		{"a subcommand's flags", []string{"txexec", "show", "1", "--"}, []string{"--diff", "--state-dir"}, false},
		{"flags of log after --state-dir", []string{"txexec", "--state-dir=/s", "log", "--"}, []string{"--json", "--run", "--state-dir"}, false},
		{"flags of parallel", []string{"txexec", "parallel", "--k"}, []string{"--keep-going"}, false},
		{"a command after --", []string{"txexec", "--", "bas"}, []string{"bash"}, true},
		{"a command after options", []string{"txexec", "--retry", "2", "bas"}, []string{"bash"}, true},
		{"no subcommand after other options", []string{"txexec", "--retry", "2", "recove"}, nil, false},
		{"the command's arguments are files", []string{"txexec", "--", "cat", dir + "/sf"}, []string{dir + "/sfile"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var quoted []string
			for _, w := range tc.words {
				quoted = append(quoted, "'"+w+"'")
			}
			script := BashCompletion() + `
COMP_WORDS=(` + strings.Join(quoted, " ") + `)
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_txexec
printf '%s\n' "${COMPREPLY[@]}"
`
			cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
			cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			got := strings.Fields(string(out))
			if tc.some {
				for _, w := range tc.want {
					assert.Contains(t, got, w)
				}
				return
			}
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}
