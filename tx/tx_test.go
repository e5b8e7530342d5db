package tx_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/tx"
)

// childEnv, when set, makes the test binary run one scenario under txexec
// instead of the tests (TestMain): the argument is the scenario's
// directory.
const childEnv = "TXEXEC_TX_TEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		if err := child(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("ok")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child runs under txexec --in-program: 4 goroutines × 25 read-modify-write
// increments of one counter, each in tx.Run; a transaction that writes then
// aborts, with a line written while paused.
func child(dir string) error {
	counter := filepath.Join(dir, "counter")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				err := tx.RunFlags(0, 0, func() error {
					b, err := os.ReadFile(counter)
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(strings.TrimSpace(string(b)))
					if err != nil {
						return err
					}
					return os.WriteFile(counter, []byte(strconv.Itoa(n+1)+"\n"), 0o644)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}

	stop := errors.New("stop")
	err := tx.Run(func() error {
		if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("changed\n"), 0o644); err != nil {
			return err
		}
		if err := tx.Pause(); err != nil {
			return err
		}
		werr := os.WriteFile(filepath.Join(dir, "log"), []byte("logged while paused\n"), 0o644)
		if err := tx.Resume(); err != nil {
			return err
		}
		if werr != nil {
			return werr
		}
		return stop
	})
	if err != stop {
		return fmt.Errorf("tx.Run with a failing function: %v, want the function's error", err)
	}
	if _, err := tx.Begin(0); err != nil {
		return err
	}
	if err := tx.Abort(); err != nil {
		return err
	}
	if err := tx.End(); !errors.Is(err, tx.ErrAborted) {
		return fmt.Errorf("End after Abort: %v, want ErrAborted", err)
	}
	return nil
}

func TestOutsideTxexec(t *testing.T) {
	_, err := tx.Begin(0)
	require.ErrorIs(t, err, tx.ErrNotSupervised)
	assert.Contains(t, err.Error(), "txexec --in-program", "the error says what to do")
	err = tx.Run(func() error { t.Fatal("the function ran without a transaction"); return nil })
	require.ErrorIs(t, err, tx.ErrNotSupervised)
	require.ErrorIs(t, tx.Pause(), tx.ErrNotSupervised)
}

// TestUnderTxexec runs child under a txexec built from this module.
func TestUnderTxexec(t *testing.T) {
	bin := os.Getenv("TXEXEC_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "txexec")
		build := exec.Command("go", "build", "-o", bin, "txexec/cmd/txexec")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "go build txexec/cmd/txexec:\n%s", out)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "counter"), []byte("0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kept"), []byte("original\n"), 0o644))
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(bin, "--in-program", "--", self)
	cmd.Env = append(os.Environ(), childEnv+"="+dir, "TXEXEC_STATE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "ok\n")

	b, err := os.ReadFile(filepath.Join(dir, "counter"))
	require.NoError(t, err)
	assert.Equal(t, "100\n", string(b), "4 × 25 increments, each in its own transaction")
	b, err = os.ReadFile(filepath.Join(dir, "kept"))
	require.NoError(t, err)
	assert.Equal(t, "original\n", string(b), "the aborted transaction's write is rolled back")
	b, err = os.ReadFile(filepath.Join(dir, "log"))
	require.NoError(t, err)
	assert.Equal(t, "logged while paused\n", string(b), "the write between Pause and Resume survives the abort")
}
