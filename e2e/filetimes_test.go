package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDirTimesKeepTheKernelsOrder: a directory whose entries change and a
// file written in it show mtimes in the order of the changes, both ways,
// natively and in a transaction (testdata/dirclock.c: create and remove an
// entry, write the file, stat both, 3,000 times). txexec stamps the
// directory, the kernel the file; when the directory's stamp came from
// CLOCK_REALTIME, 12 to 33 rounds of 3,000 showed the file written after
// it as the earlier one.
func TestDirTimesKeepTheKernelsOrder(t *testing.T) {
	const rounds = 3000
	bin := buildC(t, t.TempDir(), "dirclock", "dirclock")
	for _, order := range []string{"file-after-dir", "dir-after-file"} {
		t.Run(order, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "d", "file"), nil, 0o644))
			want := fmt.Sprintf("%s: 0 of %d\n", order, rounds)
			for _, m := range []mode{native, transaction} {
				r := run(t, m, command{Argv: []string{bin, order, fmt.Sprint(rounds), "d"}, Dir: dir, TxArgs: []string{"--on-exit=abort"}})
				require.Equal(t, 0, r.Status, "%s: stderr:\n%s", m, r.Stderr)
				assert.Equal(t, want, r.Stdout, "%s: rounds whose last change shows the earlier mtime", m)
			}
		})
	}
}
