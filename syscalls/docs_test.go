package syscalls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMarkdownIsCurrent is the golden test of docs/syscalls.md.
func TestMarkdownIsCurrent(t *testing.T) {
	const regen = "run `go run ./cmd/gensyscalldocs` from the repository root"
	path := filepath.Join("..", "docs", "syscalls.md")
	got, err := os.ReadFile(path)
	require.NoError(t, err, "docs/syscalls.md is missing: %s", regen)
	want := Markdown(newTestTable(t))
	if string(got) == want {
		return
	}
	gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gotLines) || i < len(wantLines); i++ {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Fatalf("docs/syscalls.md is stale (%s); first difference at line %d:\n  file:  %q\n  table: %q", regen, i+1, g, w)
		}
	}
}

func TestMarkdown(t *testing.T) {
	md := Markdown(newTestTable(t))
	assert.True(t, strings.HasPrefix(md, "<!-- Code generated"), "starts with the generated-code marker")
	assert.Contains(t, md, "DO NOT EDIT.")
	assert.Contains(t, md, "| 101 | ptrace | partial | refused with EPERM")
	assert.Contains(t, md, "| 257 | openat | emulated |  |")
	assert.Contains(t, md, "337–423")
	assert.Less(t, strings.Index(md, "| 0 | read |"), strings.Index(md, "| 1 | write |"), "sorted by number")
	assert.Less(t, strings.Index(md, "| 334 | rseq |"), strings.Index(md, "| 424 | pidfd_send_signal |"), "sorted by number")
}

func TestMdCell(t *testing.T) {
	assert.Equal(t, `a\|b c`, mdCell("a|b\nc"))
}
