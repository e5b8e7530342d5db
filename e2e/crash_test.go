package e2e

// Crash injection: txexec is SIGKILLed at each named fault point of the
// commit path (TXEXEC_FAULT, see store.Fault) and at random instants;
// after recovery the tree must be exactly as before the transaction or
// exactly as after it (as the same script leaves a copy of the tree when
// run natively), and every commit txexec reported must be there.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashScript makes a change of every kind the redo log knows: create,
// overwrite (a copy replaces the file), rename, delete, mkdir, chmod of a
// file (carried by its copy) and of a directory (a setattr in place), an
// append to a file with two hard links (written back in place), the
// removal of a directory tree, a symlink and an explicit mtime.
const crashScript = `set -e
echo new > new.txt
echo overwritten > a.txt
mv b.txt b-renamed.txt
rm c.txt
mkdir -p made/deep
echo deep > made/deep/f.txt
chmod 0600 d.txt
chmod 0700 sub
echo more >> hl1
rm -r old
ln -s a.txt link
touch -d @1000000000 stamped.txt`

// crashFixture makes the tree crashScript changes, in a new directory dir.
func crashFixture(t testing.TB, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "old", "inner"), 0o755))
	for name, content := range map[string]string{
		"a.txt": "alpha\n", "b.txt": "bravo\n", "c.txt": "charlie\n", "d.txt": "delta\n",
		"sub/e.txt": "echo\n", "old/x": "x\n", "old/inner/y": "y\n", "hl1": "hard\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	require.NoError(t, os.Link(filepath.Join(dir, "hl1"), filepath.Join(dir, "hl2")))
}

// crashStates are the trees before and after crashScript, from a native
// run on a copy.
type crashStates struct {
	pre, post []string
	opN       int // redo ops of the transaction
}

var (
	crashStatesOnce sync.Once
	crashStatesVal  crashStates
)

// crashReference computes crashStates once: the tree before, the tree
// after a native run, and (from one undisturbed transactional run, which
// must give the same tree) the number of redo ops.
func crashReference(t *testing.T) crashStates {
	t.Helper()
	crashStatesOnce.Do(func() {
		base, err := os.MkdirTemp("", "txexec-crash-ref-")
		require.NoError(t, err)
		defer os.RemoveAll(base)
		pre, native, txd := filepath.Join(base, "pre"), filepath.Join(base, "native"), filepath.Join(base, "tx")
		crashFixture(t, pre)
		copyTree(t, pre, native)
		copyTree(t, pre, txd)
		nativeRun(t, native, crashScript)
		s := txState{dir: filepath.Join(base, "state")}
		r := s.tx(t, txd, crashScript)
		require.Equal(t, 0, r.status, "an undisturbed run must commit: %s", r.stderr)
		c := crashStates{pre: relabel(treeState(t, pre)), post: relabel(treeState(t, native)), opN: s.entry(t, 1).Ops}
		require.Equal(t, c.post, relabel(treeState(t, txd)), "txexec must give the native result")
		require.NotEqual(t, c.pre, c.post)
		crashStatesVal = c
	})
	if crashStatesVal.pre == nil {
		t.Fatal("no reference states (see the first test that asked)")
	}
	return crashStatesVal
}

// relabel drops the root's own line (its mode and owner differ between
// temp directories), keeping the entries under it.
func relabel(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, ". ") {
			out = append(out, l)
		}
	}
	return out
}

// whichState says whether tree is c.pre ("pre"), c.post ("post"), or
// neither ("").
func (c crashStates) whichState(tree []string) string {
	switch {
	case assert.ObjectsAreEqual(c.pre, tree):
		return "pre"
	case assert.ObjectsAreEqual(c.post, tree):
		return "post"
	}
	return ""
}

// recoverAndCheck runs txexec recover (the state directory may hold any
// history), then checks that nothing is left half done: no running or
// committed transaction, no staging directory, and a second recover has
// nothing to do. It returns what recover printed.
func recoverAndCheck(t *testing.T, s txState) string {
	t.Helper()
	r := s.run(t, "/", nil, "recover")
	require.Equal(t, 0, r.status, "txexec recover: %s%s", r.stdout, r.stderr)
	for _, e := range s.log(t) {
		assert.Contains(t, []string{"applied", "aborted"}, e.State, "transaction %d after recovery", e.ID)
	}
	assert.Empty(t, s.stagingLeft(t), "staging after recovery")
	again := s.run(t, "/", nil, "recover")
	require.Equal(t, 0, again.status)
	assert.Equal(t, "nothing to recover\n", again.stdout, "recovery is done after one run")
	return r.stdout
}

func TestCrashAtFaultPoints(t *testing.T) {
	ref := crashReference(t)
	require.GreaterOrEqual(t, ref.opN, 8, "the script must give several redo ops")
	type want int
	const (
		pre want = iota
		post
	)
	tests := []struct {
		fault string
		want  want
		// recoverFault, when set, kills the first txexec recover there
		// too; a second one finishes.
		recoverFault string
		// autoRecover: recovery by the next ordinary run instead of
		// txexec recover.
		autoRecover bool
		// noDurable runs the transaction with --no-durable: no syncs,
		// still all or nothing when txexec dies.
		noDurable bool
	}{
		{fault: "store.before-commit", want: pre},
		{fault: "store.after-commit", want: post},
		{fault: "txn.after-commit-point", want: post},
		{fault: "txn.apply.before-op@1", want: post},
		{fault: "txn.apply.before-op@2", want: post},
		{fault: fmt.Sprintf("txn.apply.before-op@%d", ref.opN/2), want: post},
		{fault: fmt.Sprintf("txn.apply.before-op@%d", ref.opN), want: post},
		{fault: "txn.apply.mid-op", want: post},
		{fault: "txn.apply.mid-op@2", want: post},
		{fault: "txn.before-mark-applied", want: post},
		{fault: "txn.after-commit-point", want: post, recoverFault: "txn.apply.before-op@3"},
		{fault: "txn.apply.mid-op", want: post, recoverFault: "txn.apply.mid-op"},
		{fault: "store.before-commit", want: pre, autoRecover: true},
		{fault: "txn.apply.before-op@2", want: post, autoRecover: true},
		{fault: "store.before-commit", want: pre, noDurable: true},
		{fault: "txn.apply.before-op@2", want: post, noDurable: true},
	}
	for _, tt := range tests {
		name := tt.fault
		if tt.recoverFault != "" {
			name += ",recover@" + tt.recoverFault
		}
		if tt.autoRecover {
			name += ",next-run"
		}
		var opts []string
		if tt.noDurable {
			name += ",no-durable"
			opts = append(opts, "--no-durable")
		}
		t.Run(name, func(t *testing.T) {
			s := newTxState(t)
			work := filepath.Join(t.TempDir(), "work")
			crashFixture(t, work)

			r := s.run(t, work, []string{"TXEXEC_FAULT=" + tt.fault}, append(opts, "--", "sh", "-c", crashScript)...)
			require.True(t, r.killed, "the fault point must be reached and kill txexec; status %d, stderr:\n%s", r.status, r.stderr)
			if tt.want == pre {
				assert.Equal(t, ref.pre, relabel(treeState(t, work)), "no steal: nothing reaches the host before the commit point")
			}
			if tt.recoverFault != "" {
				r := s.run(t, "/", []string{"TXEXEC_FAULT=" + tt.recoverFault}, "recover")
				require.True(t, r.killed, "recover must reach %s; stdout %q stderr %q", tt.recoverFault, r.stdout, r.stderr)
			}
			if tt.autoRecover {
				r := s.run(t, work, nil, "--", "true")
				require.Equal(t, 0, r.status, r.stderr)
				if tt.want == post {
					assert.Contains(t, r.stderr, "txexec: recovered transaction 1: finished writing it through")
				}
			}
			out := recoverAndCheck(t, s)
			tree := relabel(treeState(t, work))
			e := s.entry(t, 1)
			if tt.want == pre {
				assert.Equal(t, ref.pre, tree, "recovered to the state before")
				assert.Equal(t, "aborted", e.State)
				if !tt.autoRecover {
					assert.Equal(t, "transaction 1: aborted; its supervisor died before the commit point\n", out)
				}
			} else {
				assert.Equal(t, ref.post, tree, "recovered to the state after")
				assert.Equal(t, "applied", e.State)
				if !tt.autoRecover {
					assert.Equal(t, "transaction 1: committed; finished writing it through\n", out)
				}
			}
		})
	}
}

// TestCrashKeepCommit: txexec commit ID of a kept transaction killed at
// the fault points of the commit path. Killed before the commit point,
// the transaction is still kept (and commits on a second txexec commit);
// after it, recovery finishes it.
func TestCrashKeepCommit(t *testing.T) {
	ref := crashReference(t)
	tests := []struct {
		fault     string
		stillKept bool
	}{
		{"store.before-commit", true},
		{"store.after-commit", false},
		{"txn.apply.before-op@3", false},
		{"txn.apply.mid-op@2", false},
		{"txn.before-mark-applied", false},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			s := newTxState(t)
			work := filepath.Join(t.TempDir(), "work")
			crashFixture(t, work)
			r := s.tx(t, work, crashScript, "--on-exit=keep")
			require.Equal(t, 0, r.status, r.stderr)
			id := txID(t, r.stderr)

			r = s.run(t, "/", []string{"TXEXEC_FAULT=" + tt.fault}, "commit", fmt.Sprint(id))
			require.True(t, r.killed, "txexec commit must reach %s: %s", tt.fault, r.stderr)
			r = s.run(t, "/", nil, "recover")
			require.Equal(t, 0, r.status, r.stderr)
			if tt.stillKept {
				assert.Equal(t, "nothing to recover\n", r.stdout)
				assert.Equal(t, ref.pre, relabel(treeState(t, work)))
				assert.Equal(t, "kept", s.entry(t, id).State)
				r = s.run(t, "/", nil, "commit", fmt.Sprint(id))
				require.Equal(t, 0, r.status, r.stderr)
			} else {
				assert.Equal(t, fmt.Sprintf("transaction %d: committed; finished writing it through\n", id), r.stdout)
			}
			assert.Equal(t, ref.post, relabel(treeState(t, work)))
			assert.Equal(t, "applied", s.entry(t, id).State)
			recoverAndCheck(t, s)
		})
	}
}

// crashTrialN is how many random-instant kills TestCrashAtRandomInstants
// makes: hundreds in make test, thousands in make soak (TXEXEC_SOAK=1).
func crashTrialN() int {
	if os.Getenv("TXEXEC_SOAK") == "1" {
		return 2000
	}
	if testing.Short() {
		return 20
	}
	return 200
}

// maxKillDelay bounds the random delay before the kill.
const maxKillDelay = 200 * time.Millisecond

// TestCrashAtRandomInstants starts a transaction and SIGKILLs txexec after
// a random delay below maxKillDelay (seeded: TXEXEC_CRASH_SEED=N replays
// the choices), then recovers. Every other trial aims at the end of the
// run, where the commit is: its delay is drawn from the last 40% of the
// time the latest undisturbed run took. The tree must be all or nothing, and exactly the post-state
// whenever txexec had reported the commit (exit status 0) before the
// kill. All trials share one state directory, so that recovery also
// works through a long history.
func TestCrashAtRandomInstants(t *testing.T) {
	ref := crashReference(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("TXEXEC_CRASH_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "TXEXEC_CRASH_SEED")
	}
	t.Logf("seed %d (TXEXEC_CRASH_SEED=%d replays the delays)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x7478657865630a))
	s := newTxState(t)
	base := t.TempDir()
	counts := map[string]int{}
	runTime := maxKillDelay / 2 // of the latest run that finished
	for trial := range crashTrialN() {
		work := filepath.Join(base, strconv.Itoa(trial))
		crashFixture(t, work)
		delay := time.Duration(rng.Int64N(int64(maxKillDelay)))
		if trial%2 == 1 {
			delay = min(maxKillDelay-1, runTime*6/10+time.Duration(rng.Int64N(int64(runTime*4/10)+1)))
		}
		started := time.Now()
		c := s.cmd(work, nil, "--", "sh", "-c", crashScript)
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		require.NoError(t, c.Start())
		timer := time.AfterFunc(delay, func() { c.Process.Kill() })
		err := c.Wait()
		timer.Stop()
		r := finished(t, c, err, &out, &errb)
		reported := r.status == 0
		if reported {
			runTime = time.Since(started)
		}
		if !reported && !r.killed {
			t.Fatalf("trial %d: txexec exited %d without being killed: %s", trial, r.status, r.stderr)
		}
		recoverAndCheck(t, s)
		state := ref.whichState(relabel(treeState(t, work)))
		if state == "" {
			t.Fatalf("trial %d (kill after %v): the tree is neither the state before nor the state after:\n%s",
				trial, delay, strings.Join(treeState(t, work), "\n"))
		}
		if reported && state != "post" {
			t.Fatalf("trial %d (kill after %v): txexec reported the commit, but the tree is the state before", trial, delay)
		}
		outcome := state
		if reported {
			outcome = "reported"
		}
		counts[outcome]++
		require.NoError(t, os.RemoveAll(work))
	}
	t.Logf("%d trials: %d killed before the commit point (pre), %d killed after it (post, recovered), %d finished before the kill",
		crashTrialN(), counts["pre"], counts["post"], counts["reported"])
}

// bench2000Script creates 2000 files of 1 KiB with shell builtins only,
// so that the comparison is of file-system work, not of process starts.
const bench2000Script = `i=0; while [ $i -lt 2000 ]; do printf '%1024s' x > f$i; i=$((i+1)); done`

// BenchmarkCommit2000Files compares creating 2000 1 KiB files in one
// durable transaction (txexec -- sh -c …: supervision, staging, an fsync
// of each staged file, one SQLite commit, write-through by rename, one
// fsync per directory) with the same script run natively followed by sync(1).
// It reports both times per run, their ratio (x-native; the target is at
// most 2), and the write-through part of the transaction (from the
// commit point to applied, from txexec log).
func BenchmarkCommit2000Files(b *testing.B) {
	s := txState{dir: filepath.Join(b.TempDir(), "state")}
	var native, tx, writeThrough time.Duration
	for b.Loop() {
		nd, td := filepath.Join(b.TempDir(), "native"), filepath.Join(b.TempDir(), "tx")
		require.NoError(b, os.Mkdir(nd, 0o755))
		require.NoError(b, os.Mkdir(td, 0o755))

		start := time.Now()
		nativeRun(b, nd, bench2000Script+"; sync")
		native += time.Since(start)

		start = time.Now()
		r := s.tx(b, td, bench2000Script)
		tx += time.Since(start)
		require.Equal(b, 0, r.status, r.stderr)

		// Newest first: this run's transaction.
		var entries []struct {
			Ops       int       `json:"ops"`
			Committed time.Time `json:"committed"`
			Applied   time.Time `json:"applied"`
		}
		out := s.run(b, "/", nil, "log", "--json")
		require.NoError(b, json.Unmarshal([]byte(out.stdout), &entries))
		require.Equal(b, 2000, entries[0].Ops)
		writeThrough += entries[0].Applied.Sub(entries[0].Committed)
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((native/n).Microseconds())/1000, "native+sync-ms/op")
	b.ReportMetric(float64((tx/n).Microseconds())/1000, "txexec-ms/op")
	b.ReportMetric(float64((writeThrough/n).Microseconds())/1000, "write-through-ms/op")
	b.ReportMetric(float64(tx)/float64(native), "x-native")
	b.ReportMetric(0, "ns/op")
}
