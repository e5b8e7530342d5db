package txn

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
	"txexec/store"
)

// TestPreflight: a commit whose write-through would meet an immutable or
// append-only flag on the host is refused before its commit point, with
// the object named; flags that do not stand in the way pass.
func TestPreflight(t *testing.T) {
	testenv.NeedRoot(t, "setting the immutable flag needs CAP_LINUX_IMMUTABLE")
	d := t.TempDir()
	for _, p := range []string{"imm", "app", "plain", "staging"} {
		require.NoError(t, os.Mkdir(filepath.Join(d, p), 0o755))
	}
	for _, p := range []string{"app/old", "plain/immf", "plain/appf", "staging/1"} {
		writeFile(t, filepath.Join(d, p), "x")
	}
	testenv.AddInodeFlags(t, d+"/imm", store.FlagImmutable)
	testenv.AddInodeFlags(t, d+"/app", store.FlagAppend)
	testenv.AddInodeFlags(t, d+"/plain/immf", store.FlagImmutable)
	testenv.AddInodeFlags(t, d+"/plain/appf", store.FlagAppend)
	staged := inoOf(t, d+"/staging/1")
	tests := []struct {
		name string
		op   store.RedoOp
		want string // "" when it passes
	}{
		{"create in immutable dir", store.RedoOp{Kind: store.OpRename, Src: d + "/staging/1", Path: d + "/imm/new", Ino: staged}, d + "/imm is immutable"},
		{"create in append-only dir", store.RedoOp{Kind: store.OpRename, Src: d + "/staging/1", Path: d + "/app/new", Ino: staged}, ""},
		{"replace in append-only dir", store.RedoOp{Kind: store.OpRename, Src: d + "/staging/1", Path: d + "/app/old", Ino: staged}, d + "/app is append-only"},
		{"unlink in append-only dir", store.RedoOp{Kind: store.OpUnlink, Path: d + "/app/old", Ino: inoOf(t, d+"/app/old")}, d + "/app is append-only"},
		{"replace an immutable file", store.RedoOp{Kind: store.OpRename, Src: d + "/staging/1", Path: d + "/plain/immf", Ino: staged}, d + "/plain/immf is immutable"},
		{"rename an append-only file", store.RedoOp{Kind: store.OpRename, Src: d + "/plain/appf", Path: d + "/plain/moved", Ino: inoOf(t, d+"/plain/appf")}, d + "/plain/appf is append-only"},
		{"chmod an immutable file", store.RedoOp{Kind: store.OpSetattr, Path: d + "/plain/immf", Ino: inoOf(t, d+"/plain/immf"), Attrs: store.AttrMode, Mode: 0o600}, d + "/plain/immf is immutable"},
		{"another inode at the path", store.RedoOp{Kind: store.OpSetattr, Path: d + "/plain/immf", Ino: 1, Attrs: store.AttrMode, Mode: 0o600}, ""},
		{"plain", store.RedoOp{Kind: store.OpRename, Src: d + "/staging/1", Path: d + "/plain/new", Ino: staged}, ""},
		{"made by an earlier op", store.RedoOp{Kind: store.OpUnlink, Path: d + "/plain/later/x", Ino: 7}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Preflight([]store.RedoOp{tt.op})
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "redo op 0")
			assert.Contains(t, err.Error(), "nothing was committed")
		})
	}
	t.Run("one directory asked two questions", func(t *testing.T) {
		// A directory looked at once for a create (may it change?) is
		// still asked whether it may lose an entry.
		err := Preflight([]store.RedoOp{
			{Kind: store.OpRename, Src: d + "/staging/1", Path: d + "/app/new", Ino: staged},
			{Kind: store.OpUnlink, Path: d + "/app/old", Ino: inoOf(t, d+"/app/old")},
		})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "redo op 1")
		assert.Contains(t, err.Error(), d+"/app is append-only")
	})
}
