package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashHelperEnv, when set to a state directory, makes the test binary a
// committer that the crash tests kill: it commits crashOpN ops per
// transaction, crashTxN transactions, then exits 0.
const crashHelperEnv = "TXEXEC_STORE_CRASH_HELPER"

const crashOpN, crashTxN = 50, 1000

// crashAreaEnv, when set to a directory, makes the crash helper give every
// transaction a staging area there (as if it were another mount's root),
// with a staged file in it, before committing.
const crashAreaEnv = "TXEXEC_STORE_CRASH_AREA"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		crashHelper(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func crashHelper(dir string) {
	s, err := Open(dir, Options{Durable: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := range crashTxN {
		tx, err := s.Begin(TxInfo{Command: []string{"helper", strconv.Itoa(i)}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if mp := os.Getenv(crashAreaEnv); mp != "" {
			area, err := s.AddStagingArea(tx.ID, mp)
			if err == nil {
				err = os.WriteFile(filepath.Join(area, "1"), []byte("staged\n"), 0o600)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		if _, err := s.Commit(tx.ID, nil, Prepared{Ops: sampleOps(crashOpN), Writes: []Granule{{Kind: "data", Path: fmt.Sprint("/f", i)}}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// runCrashHelper runs the helper on dir with extra environment, kills it
// after killAfter if that is not zero, and reports whether it died of
// SIGKILL.
func runCrashHelper(t *testing.T, dir string, killAfter time.Duration, env ...string) (killed bool) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, crashHelperEnv+"="+dir)...)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { cmd.Process.Kill() })
		defer timer.Stop()
	}
	err = cmd.Wait()
	if err == nil {
		return false
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "helper: %v", err)
	return true
}

// checkAllOrNothing reopens dir after a crash, runs recovery's steps
// (the helper never marks applied, so its commits are all pending) and
// checks that every transaction is either committed with all its ops or
// aborted with none, and that the commit counter matches the commits. It
// returns how many transactions dir holds in each state.
func checkAllOrNothing(t *testing.T, dir string) (committed, aborted int) {
	t.Helper()
	s := openT(t, dir, Options{Durable: true})
	_, err := s.AbortOrphans(dead, "supervisor died")
	require.NoError(t, err)
	pending, err := s.ClaimPending(dead)
	require.NoError(t, err)
	for _, p := range pending {
		assert.Equal(t, sampleOps(crashOpN), p.Ops, "transaction %d", p.ID)
		require.NoError(t, s.MarkApplied(p.ID))
	}
	recs, err := s.Log(0)
	require.NoError(t, err)
	for _, r := range recs {
		switch r.State {
		case StateApplied:
			committed++
			assert.Equal(t, crashOpN, r.OpN, "transaction %d", r.ID)
			assert.Equal(t, 1, r.GranuleN, "transaction %d", r.ID)
			assert.NotZero(t, r.Seq)
		case StateAborted:
			aborted++
			assert.Zero(t, r.OpN, "transaction %d", r.ID)
			assert.Zero(t, r.GranuleN, "transaction %d", r.ID)
			assert.Zero(t, r.Seq)
		default:
			t.Errorf("transaction %d is %s after recovery", r.ID, r.State)
		}
	}
	assert.LessOrEqual(t, len(pending), committed)
	var last int64
	require.NoError(t, s.db.QueryRow("SELECT last_seq FROM commit_counter").Scan(&last))
	assert.Equal(t, int64(committed), last)
	_, err = s.GCStaging()
	require.NoError(t, err)
	return committed, aborted
}

func TestCrashAtFaultPoints(t *testing.T) {
	tests := []struct {
		fault         string
		wantCommitted int
		wantAborted   int
	}{
		{"store.before-commit", 0, 1},
		{"store.after-commit", 1, 0},
		{"store.before-commit@3", 2, 1},
		{"store.after-commit@3", 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			dir := t.TempDir()
			require.True(t, runCrashHelper(t, dir, 0, FaultEnv+"="+tt.fault), "the fault point must kill")
			committed, aborted := checkAllOrNothing(t, dir)
			assert.Equal(t, tt.wantCommitted, committed)
			assert.Equal(t, tt.wantAborted, aborted)
		})
	}
}

// TestCrashWithStagingAreas kills a committer that gives its
// transactions staging areas on "another mount" (a directory standing for
// one) at the fault points around an area's creation and the commit
// point: after recovery's steps (checkAllOrNothing ends with GCStaging)
// no area is left, whether it was only recorded, made, or committed.
func TestCrashWithStagingAreas(t *testing.T) {
	tests := []struct {
		fault         string
		wantCommitted int
		wantAborted   int
	}{
		{FaultAreaRegistered, 0, 1},
		{FaultAreaRegistered + "@2", 1, 1},
		{"store.before-commit", 0, 1},
		{"store.after-commit@2", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			dir, mnt := t.TempDir(), t.TempDir()
			require.True(t, runCrashHelper(t, dir, 0, FaultEnv+"="+tt.fault, crashAreaEnv+"="+mnt), "the fault point must kill")
			committed, aborted := checkAllOrNothing(t, dir)
			assert.Equal(t, tt.wantCommitted, committed)
			assert.Equal(t, tt.wantAborted, aborted)
			left, err := os.ReadDir(mnt)
			require.NoError(t, err)
			assert.Empty(t, left, "staging areas after recovery")
			s := openT(t, dir, Options{})
			var rows int
			require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM staging_area`).Scan(&rows))
			assert.Zero(t, rows, "area records after recovery")
		})
	}
}

func TestCrashAtRandomInstants(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns many processes")
	}
	dir := t.TempDir()
	for trial := range 8 {
		killAfter := time.Duration(50+rand.IntN(150)) * time.Millisecond
		killed := runCrashHelper(t, dir, killAfter)
		committed, aborted := checkAllOrNothing(t, dir)
		t.Logf("trial %d: killed=%v after %v: %d committed, %d aborted so far", trial, killed, killAfter, committed, aborted)
	}
}
