package e2e

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// determFixture makes dir afresh, with hostdir/ holding files created in
// a random order (so that the host lists them in no fixed order).
func determFixture(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "hostdir"), 0o755))
	names := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "hostdir", n), []byte(n), 0o644))
	}
}

// timedTree is snapshotTree with the modification times of everything the
// run made: every entry below dir but hostdir/, the fixture's.
func timedTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch rel {
		case ".":
			return nil
		case "hostdir":
			return filepath.SkipDir // the fixture's, made afresh each time
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%v %s mtime=%d.%09d", info.Mode(), rel, st.Mtim.Sec, st.Mtim.Nsec)
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" sha256=%x", sha256.Sum256(b))
		}
		out = append(out, line)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// TestDeterministicRunsRepeat: a C program and a Python script that print
// the time, random numbers, mkstemp and tempfile names, uuid4(), their
// pids, listings of a directory made in random order and of a host one,
// and date(1), and write files with those values and their mtimes, give
// byte-identical stdout and committed trees over three runs with the same
// seed, and different ones with another seed.
func TestDeterministicRunsRepeat(t *testing.T) {
	testenv.NeedRoot(t, "--deterministic makes a pid namespace")
	requireTools(t, "python3", "date")
	bin := buildC(t, t.TempDir(), "determ", "determ")
	script, err := filepath.Abs("testdata/determ.py")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "work")
	state := t.TempDir()
	runSeed := func(seed string) (string, []string) {
		determFixture(t, dir)
		r := run(t, transaction, command{
			Argv:   []string{"sh", "-c", `"$1" "$3" && python3 "$2" "$3"`, "sh", bin, script, dir},
			Env:    []string{"TXEXEC_STATE_DIR=" + state},
			TxArgs: []string{"--deterministic=" + seed},
		})
		require.Equal(t, 0, r.Status, "stderr:\n%s", r.Stderr)
		return r.Stdout, timedTree(t, dir)
	}
	out1, tree1 := runSeed("7")
	t.Logf("first run:\n%s", out1)
	for _, want := range []string{
		"date Sat Jan  1 00:00:00 UTC 2000", "pid 101 ppid 100", "hostname txexec nprocs 4", "vDSO hidden",
		"listing hostdir: . .. alpha bravo charlie delta echo foxtrot golf hotel",
		"listdir hostdir ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel']",
	} {
		assert.Contains(t, out1, want)
	}
	assert.Contains(t, tree1, "-rw-r--r-- c-values.txt mtime=946684800.270000000 sha256="+sha256Of(t, filepath.Join(dir, "c-values.txt")),
		"the C program's output file has the time of the virtual clock at its last write")
	for i := 2; i <= 3; i++ {
		out, tree := runSeed("7")
		assert.Equal(t, out1, out, "stdout of run %d with the same seed", i)
		assert.Equal(t, tree1, tree, "committed tree of run %d with the same seed", i)
	}
	out8, tree8 := runSeed("8")
	assert.NotEqual(t, out1, out8, "stdout with another seed")
	assert.NotEqual(t, tree1, tree8, "committed tree with another seed")
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
