package e2e

// txexec parallel: commands side by side, committed in input order, with
// the result of running them one after another.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runParallel runs txexec parallel ARGS in cwd against s with stdin.
func (s txState) runParallel(t *testing.T, cwd, stdin string, args ...string) txResult {
	t.Helper()
	c := s.cmd(cwd, nil, append([]string{"parallel"}, args...)...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, c.Start())
	watchdog := time.AfterFunc(txexecRunLimit, func() { c.Process.Signal(syscall.SIGABRT) })
	err := c.Wait()
	watchdog.Stop()
	return finished(t, c, err, &out, &errb)
}

// runIDOf is the run id the summary line names ("txexec log --run N").
func runIDOf(t *testing.T, stderr string) string {
	t.Helper()
	m := regexp.MustCompile(`txexec log --run (\d+)`).FindStringSubmatch(stderr)
	require.NotNil(t, m, "no run id in the summary; stderr:\n%s", stderr)
	return m[1]
}

// runTx is one transaction of txexec log --run --json.
type runTx struct {
	ID     int64  `json:"id"`
	State  string `json:"state"`
	Seq    int64  `json:"seq"`
	Run    int64  `json:"run"`
	RunSeq *int   `json:"run_seq"`
	Reason string `json:"reason"`
}

// runLog is txexec log --run ID --json.
func (s txState) runLog(t *testing.T, id string) []runTx {
	t.Helper()
	res := s.run(t, t.TempDir(), nil, "log", "--run", id, "--json")
	require.Equal(t, 0, res.status, res.stderr)
	var txs []runTx
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &txs))
	return txs
}

// requireCommittedInOrder checks the transactions of a run: listed by
// place, each command committed exactly once (none after commandN), and
// their commit sequence numbers increase with the place.
func requireCommittedInOrder(t *testing.T, txs []runTx, commandN int) {
	t.Helper()
	var places []int
	var seqs []int64
	for _, tx := range txs {
		require.NotNil(t, tx.RunSeq, "transaction %d has no place", tx.ID)
		places = append(places, *tx.RunSeq)
		if tx.State == "applied" || tx.State == "committed" {
			seqs = append(seqs, tx.Seq)
			assert.Equal(t, len(seqs)-1, *tx.RunSeq, "transaction %d: the committed ones, one per command, in order", tx.ID)
		} else {
			assert.Equal(t, "aborted", tx.State, "transaction %d", tx.ID)
		}
	}
	assert.True(t, slices.IsSorted(places), "listed in input order: %v", places)
	assert.Len(t, seqs, commandN, "one commit per command")
	assert.True(t, slices.IsSorted(seqs), "committed in input order: %v", seqs)
}

// chainScript is command k of the chain: it reads the shared file, appends
// its number and the line it read, then sleeps, so that every later
// command running meanwhile reads a state its commit must not keep.
func chainScript(k int) string {
	return fmt.Sprintf(`l=$(tail -n 1 shared); echo "%d $l" >> shared; echo out %d; sleep 0.5`, k, k)
}

// TestConcurrentParallelSerialResult: 8 commands each reading the shared
// file, appending its number and the line it read, then sleeping: the
// file ends exactly as running them one after another leaves it, at
// every -j, and so does the output; log --run lists one commit per
// command, in input order. A few rounds here, 100 at each -j under make
// soak (TXEXEC_SOAK=1).
func TestConcurrentParallelSerialResult(t *testing.T) {
	const n = 8
	var lines []string
	for k := 1; k <= n; k++ {
		lines = append(lines, chainScript(k))
	}
	stdin := strings.Join(lines, "\n") + "\n"

	// Natively, one after another.
	native := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(native, "shared"), []byte("start\n"), 0o644))
	var wantOut strings.Builder
	for _, l := range lines {
		c := exec.Command("sh", "-c", l)
		c.Dir = native
		out, err := c.Output()
		require.NoError(t, err)
		wantOut.Write(out)
	}
	want, err := os.ReadFile(filepath.Join(native, "shared"))
	require.NoError(t, err)
	require.Equal(t, "start\n1 start\n2 1 start\n", string(want[:len("start\n1 start\n2 1 start\n")]))

	rounds := 2
	if os.Getenv("TXEXEC_SOAK") == "1" {
		rounds = 100
	}
	s := newTxState(t)
	for _, jobs := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("j%d", jobs), func(t *testing.T) {
			for round := range rounds {
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, "shared"), []byte("start\n"), 0o644))
				res := s.runParallel(t, dir, stdin, "-j", strconv.Itoa(jobs))
				require.Equal(t, 0, res.status, "round %d: %s", round, res.stderr)
				got, err := os.ReadFile(filepath.Join(dir, "shared"))
				require.NoError(t, err)
				require.Equal(t, string(want), string(got), "round %d", round)
				require.Equal(t, wantOut.String(), res.stdout, "round %d: output in input order", round)
				assert.Contains(t, res.stderr, fmt.Sprintf("%d commands, %d committed", n, n))
				requireCommittedInOrder(t, s.runLog(t, runIDOf(t, res.stderr)), n)
			}
		})
	}
}

// TestParallelOverlaps: 8 independent commands of 1 s each at -j4 run
// side by side (under the 8 s they take one after another, a bound
// generous for a shared machine; and more than twice as fast as the sum
// of their times, measured in the same run) and commit in input order; the
// commands given after -- separated by :::.
func TestParallelOverlaps(t *testing.T) {
	s := newTxState(t)
	dir := t.TempDir()
	var args []string
	for k := 1; k <= 8; k++ {
		if k > 1 {
			args = append(args, ":::")
		}
		args = append(args, "sh", "-c", fmt.Sprintf("sleep 1; echo %d > f%d; echo %d", k, k, k))
	}
	start := time.Now()
	res := s.runParallel(t, dir, "", append([]string{"-j4", "--"}, args...)...)
	wall := time.Since(start)
	require.Equal(t, 0, res.status, res.stderr)
	assert.Less(t, wall, 8*time.Second, "8 commands of 1 s at -j4")
	// Within the run, whatever the machine's load: the sum of the
	// commands' times over the wall time (4 at once: about 3.5).
	m := regexp.MustCompile(`speed-up ([0-9.]+)x`).FindStringSubmatch(res.stderr)
	require.NotNil(t, m, res.stderr)
	speedup, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.Greater(t, speedup, 2.0, "the commands overlapped")
	assert.Equal(t, "1\n2\n3\n4\n5\n6\n7\n8\n", res.stdout)
	for k := 1; k <= 8; k++ {
		assert.FileExists(t, filepath.Join(dir, fmt.Sprintf("f%d", k)))
	}
	txs := s.runLog(t, runIDOf(t, res.stderr))
	requireCommittedInOrder(t, txs, 8)
	assert.Len(t, txs, 8, "independent commands need no re-run")
}

// TestParallelFailure: a command that fails aborts as it would alone and
// gives its status; without --keep-going the commands after it are
// stopped with nothing of them committed, while those before it commit;
// with it, they run on the state without the failed one. --json gives
// one object per command, in order, then the summary.
func TestParallelFailure(t *testing.T) {
	cmds := []string{
		"echo a > a; echo A",
		"sleep 0.3; echo b > b; echo B; exit 3",
		"sleep 1; echo c > c; echo C",
		"test ! -e b && echo d > d",
	}
	stdin := strings.Join(cmds, "\n") + "\n"
	s := newTxState(t)

	t.Run("stop", func(t *testing.T) {
		dir := t.TempDir()
		res := s.runParallel(t, dir, stdin, "-j4")
		assert.Equal(t, 3, res.status, res.stderr)
		assert.Equal(t, "A\nB\n", res.stdout, "the failed command's output too; none of the stopped ones'")
		assert.FileExists(t, filepath.Join(dir, "a"))
		for _, f := range []string{"b", "c", "d"} {
			assert.NoFileExists(t, filepath.Join(dir, f))
		}
		assert.Regexp(t, `4 commands, 1 committed, .*1 failed, the first with status 3: sleep 0.3; echo b > b; echo B; exit 3; 2 stopped`, res.stderr)
		for _, tx := range s.runLog(t, runIDOf(t, res.stderr)) {
			if *tx.RunSeq > 0 {
				assert.Equal(t, "aborted", tx.State, "transaction %d of command %d", tx.ID, *tx.RunSeq)
			}
		}
	})
	t.Run("keep going, json", func(t *testing.T) {
		dir := t.TempDir()
		res := s.runParallel(t, dir, stdin, "-j4", "--keep-going", "--json")
		assert.Equal(t, 3, res.status, res.stderr)
		for _, f := range []string{"a", "c", "d"} {
			assert.FileExists(t, filepath.Join(dir, f))
		}
		assert.NoFileExists(t, filepath.Join(dir, "b"))
		type entry struct {
			Seq          int     `json:"seq"`
			Command      string  `json:"command"`
			Outcome      string  `json:"outcome"`
			Status       int     `json:"status"`
			Transactions []int64 `json:"transactions"`
			Stdout       string  `json:"stdout"`
			Summary      *struct {
				Commands, Committed, Failed, Status int
				FirstFailed                         int `json:"first_failed"`
			} `json:"summary"`
		}
		var got []entry
		dec := json.NewDecoder(strings.NewReader(res.stdout))
		for {
			var e entry
			err := dec.Decode(&e)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, res.stdout)
			got = append(got, e)
		}
		require.Len(t, got, 5, res.stdout)
		for k, want := range []struct {
			outcome string
			status  int
			stdout  string
		}{{"committed", 0, "A\n"}, {"failed", 3, "B\n"}, {"committed", 0, "C\n"}, {"committed", 0, ""}} {
			assert.Equal(t, k, got[k].Seq)
			assert.Equal(t, cmds[k], got[k].Command)
			assert.Equal(t, want.outcome, got[k].Outcome, cmds[k])
			assert.Equal(t, want.status, got[k].Status, cmds[k])
			assert.Equal(t, want.stdout, got[k].Stdout, cmds[k])
			assert.NotEmpty(t, got[k].Transactions)
		}
		sum := got[4].Summary
		require.NotNil(t, sum)
		assert.Equal(t, 4, sum.Commands)
		assert.Equal(t, 3, sum.Committed)
		assert.Equal(t, 1, sum.Failed)
		assert.Equal(t, 3, sum.Status)
		assert.Equal(t, 1, sum.FirstFailed)
	})
	t.Run("a failure on a state an earlier command changes is re-run", func(t *testing.T) {
		dir := t.TempDir()
		res := s.runParallel(t, dir, "sleep 0.5; echo x > made\ncat made > copy\n", "-j2")
		require.Equal(t, 0, res.status, res.stderr)
		b, err := os.ReadFile(filepath.Join(dir, "copy"))
		require.NoError(t, err)
		assert.Equal(t, "x\n", string(b), "as one after another: the second sees the first's file")
		assert.NotContains(t, res.stderr, "No such file", "the failed attempt's output is dropped")
	})
}

// TestCrashParallelKilled: txexec parallel killed by SIGKILL at several
// points: its commands die with it, and after txexec recover the host
// holds the effects of a prefix of the commands, in input order, and
// nothing else; no transaction is left running. Stopped by SIGTERM
// instead, it stops the commands not yet committing itself, reports the
// run and leaves no transaction to recover.
func TestCrashParallelKilled(t *testing.T) {
	const n = 8
	var lines []string
	for k := 1; k <= n; k++ {
		// Independent files, so that several run and wait to commit at
		// once, and a chained one, so that the order shows.
		lines = append(lines, fmt.Sprintf("sleep 0.2; echo %d > f%d; echo %d >> chain", k, k, k))
	}
	stdin := strings.Join(lines, "\n") + "\n"
	for _, tc := range []struct {
		killAt int
		sig    syscall.Signal
	}{{0, syscall.SIGKILL}, {1, syscall.SIGKILL}, {3, syscall.SIGKILL}, {6, syscall.SIGKILL}, {2, syscall.SIGTERM}} {
		killAt := tc.killAt
		t.Run(fmt.Sprintf("%v after %d", tc.sig, killAt), func(t *testing.T) {
			s := newTxState(t)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "chain"), nil, 0o644))
			c := s.cmd(dir, nil, "parallel", "-j4")
			c.Stdin = strings.NewReader(stdin)
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			var errb bytes.Buffer
			c.Stderr = &errb
			require.NoError(t, c.Start())
			if killAt > 0 {
				waitFor(t, fmt.Sprintf("f%d", killAt), func() bool {
					_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("f%d", killAt)))
					return err == nil
				})
			} else {
				// Before any commit: once its commands' transactions began.
				waitFor(t, "a transaction", func() bool {
					entries, _ := os.ReadDir(filepath.Join(s.dir, "staging"))
					return len(entries) > 0
				})
			}
			require.NoError(t, c.Process.Signal(tc.sig))
			c.Wait()
			// Its commands die with it (PR_SET_PDEATHSIG), their
			// commands with them.
			waitFor(t, "the commands to die", func() bool {
				return errors.Is(syscall.Kill(-c.Process.Pid, 0), syscall.ESRCH)
			})
			if tc.sig == syscall.SIGTERM {
				assert.Equal(t, 128+int(syscall.SIGTERM), statusOf(c.ProcessState))
				assert.Contains(t, errb.String(), "interrupted by SIGTERM")
				log := s.run(t, dir, nil, "log", "--json")
				require.Equal(t, 0, log.status, log.stderr)
				assert.NotContains(t, log.stdout, `"state": "running"`, "settled by txexec parallel itself")
			}
			res := s.run(t, dir, nil, "recover")
			require.Equal(t, 0, res.status, res.stderr)

			chain, err := os.ReadFile(filepath.Join(dir, "chain"))
			require.NoError(t, err)
			m := strings.Count(string(chain), "\n")
			var want strings.Builder
			for k := 1; k <= m; k++ {
				fmt.Fprintf(&want, "%d\n", k)
			}
			assert.Equal(t, want.String(), string(chain), "a prefix, in input order")
			assert.GreaterOrEqual(t, m, killAt)
			for k := 1; k <= n; k++ {
				_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("f%d", k)))
				assert.Equal(t, k <= m, err == nil, "f%d with a chain of %d", k, m)
			}
			log := s.run(t, dir, nil, "log", "--json")
			require.Equal(t, 0, log.status, log.stderr)
			assert.NotContains(t, log.stdout, `"state": "running"`)
			assert.NotContains(t, log.stdout, `"state": "committed"`, "recover finished every write-through")
		})
	}
}

// TestParallelLockWait: commands that each append to a shared file under
// flock(1) on one lock file, the earlier ones asking for the lock only
// once the next one holds it (it says so in a directory outside the
// transactions, --exclude). The later command holds its lock until its
// commit, after the earlier one's: without wound-wait the earlier one
// waits for it forever. With it the earlier one's wait stops the later
// command, which runs again afterwards: the run ends with the file as
// one after another, each command committed once, in order, and reports
// the stopped attempts as re-runs; txexec log says why they aborted.
func TestParallelLockWait(t *testing.T) {
	const n = 5
	var want strings.Builder
	want.WriteString("start\n")
	prev := "start"
	for k := 1; k <= n; k++ {
		prev = fmt.Sprintf("%d %s", k, prev)
		want.WriteString(prev + "\n")
	}
	s := newTxState(t)
	for _, jobs := range []int{2, 4} {
		t.Run(fmt.Sprintf("j%d", jobs), func(t *testing.T) {
			dir := t.TempDir()
			sig := filepath.Join(dir, "sig")
			require.NoError(t, os.Mkdir(sig, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "shared"), []byte("start\n"), 0o644))
			// The lock file exists on the host: its lock is the host's.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "F"), nil, 0o644))
			var lines []string
			for k := 1; k <= n; k++ {
				// Up to 2 s for the next command to hold the lock (it may
				// not be running).
				lines = append(lines, fmt.Sprintf(`i=0; while [ ! -e sig/%d ] && [ $i -lt 40 ]; do sleep 0.05; i=$((i+1)); done; `+
					`flock F sh -c 'l=$(tail -n 1 shared); echo "%d $l" >> shared; touch sig/%d'; echo %d`, k+1, k, k, k))
			}
			res := s.runParallel(t, dir, strings.Join(lines, "\n")+"\n", "-j", strconv.Itoa(jobs), "--json", "--exclude", sig)
			require.Equal(t, 0, res.status, res.stderr)
			got, err := os.ReadFile(filepath.Join(dir, "shared"))
			require.NoError(t, err)
			assert.Equal(t, want.String(), string(got))

			outLines := strings.Split(strings.TrimSpace(res.stdout), "\n")
			var sum struct {
				Summary struct {
					Committed, Rerun, Reruns, Wounded int
				} `json:"summary"`
			}
			require.NoError(t, json.Unmarshal([]byte(outLines[len(outLines)-1]), &sum), res.stdout)
			assert.Equal(t, n, sum.Summary.Committed)
			assert.GreaterOrEqual(t, sum.Summary.Wounded, 1, "a later command was stopped for an earlier one's wait")
			assert.GreaterOrEqual(t, sum.Summary.Reruns, sum.Summary.Wounded, "and run again")

			txs := s.runLog(t, regexp.MustCompile(`"run":\s*(\d+)`).FindStringSubmatch(res.stdout)[1])
			requireCommittedInOrder(t, txs, n)
			stopped := 0
			for _, tx := range txs {
				if strings.Contains(tx.Reason, "stopped by txexec parallel") {
					stopped++
				}
			}
			// Unless a txexec starting meanwhile recovered them first.
			assert.Positive(t, stopped, "the stopped attempts' transactions, aborted with the reason: %+v", txs)
		})
	}
}

// tryLockScript appends, under a write lock on F it only tries
// (lockf(3)'s F_TLOCK: fcntl F_SETLK), its argument and the last line of
// the shared file, then says it holds the lock in sig/. A refused try
// fails it.
const tryLockScript = `import fcntl, sys
f = open("F", "r+")
fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
last = open("shared").read().splitlines()[-1]
with open("shared", "a") as s:
    s.write(sys.argv[1] + " " + last + "\n")
open("sig/" + sys.argv[1], "w").close()
`

// TestParallelLockTry: commands that each append to a shared file under a
// lock on one file they only try (flock -n, or F_SETLK), the earlier ones
// trying only once the next one holds it (it says so in a directory
// outside the transactions, --exclude). The later command holds its lock
// until its commit, after the earlier one's: without more, the earlier
// one's try fails, and so does the run, where one after another every try
// succeeds. With it, the refused try voids the earlier command's attempt
// and makes the later one give way (stopped, or aborted by the conflict
// with the earlier one's re-run): the run ends with the file as one after
// another, each command committed once, in order, and reports the void
// and stopped attempts as re-runs; txexec log says why they aborted.
func TestParallelLockTry(t *testing.T) {
	requireTools(t, "python3", "flock")
	const n = 5
	var want strings.Builder
	want.WriteString("start\n")
	prev := "start"
	for k := 1; k <= n; k++ {
		prev = fmt.Sprintf("%d %s", k, prev)
		want.WriteString(prev + "\n")
	}
	s := newTxState(t)
	for _, try := range []struct {
		name string
		cmd  func(k int) string
	}{
		{"flock", func(k int) string {
			return fmt.Sprintf(`flock -n F sh -c 'l=$(tail -n 1 shared); echo "%d $l" >> shared; touch sig/%d'`, k, k)
		}},
		{"setlk", func(k int) string { return fmt.Sprintf(`python3 lock.py %d`, k) }},
	} {
		for _, jobs := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/j%d", try.name, jobs), func(t *testing.T) {
				dir := t.TempDir()
				sig := filepath.Join(dir, "sig")
				require.NoError(t, os.Mkdir(sig, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "shared"), []byte("start\n"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "lock.py"), []byte(tryLockScript), 0o644))
				// The lock file exists on the host: its lock is the host's.
				require.NoError(t, os.WriteFile(filepath.Join(dir, "F"), nil, 0o644))
				var lines []string
				for k := 1; k <= n; k++ {
					// Up to 5 s for the next command to hold the lock (it
					// may not be running; on a loaded machine a starting
					// txexec took more than 2 s, and the earlier command
					// then took the lock first); the command's status is
					// the try's.
					lines = append(lines, fmt.Sprintf(`i=0; while [ ! -e sig/%d ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; %s`,
						k+1, try.cmd(k)))
				}
				res := s.runParallel(t, dir, strings.Join(lines, "\n")+"\n", "-j", strconv.Itoa(jobs), "--json", "--exclude", sig)
				require.Equal(t, 0, res.status, "%s\n%s", res.stdout, res.stderr)
				got, err := os.ReadFile(filepath.Join(dir, "shared"))
				require.NoError(t, err)
				assert.Equal(t, want.String(), string(got))

				outLines := strings.Split(strings.TrimSpace(res.stdout), "\n")
				var sum struct {
					Summary struct {
						Committed, Rerun, Reruns, Wounded int
						LockTries                         int `json:"lock_tries"`
					} `json:"summary"`
				}
				require.NoError(t, json.Unmarshal([]byte(outLines[len(outLines)-1]), &sum), res.stdout)
				assert.Equal(t, n, sum.Summary.Committed)
				assert.GreaterOrEqual(t, sum.Summary.LockTries, 1, "an earlier command's try met a later one's lock")
				assert.GreaterOrEqual(t, sum.Summary.Reruns, sum.Summary.Wounded+sum.Summary.LockTries, "and both run again")

				txs := s.runLog(t, regexp.MustCompile(`"run":\s*(\d+)`).FindStringSubmatch(res.stdout)[1])
				requireCommittedInOrder(t, txs, n)
				void, stopped, conflicted := 0, 0, 0
				for _, tx := range txs {
					switch {
					case strings.Contains(tx.Reason, "stopped by txexec parallel") && strings.Contains(tx.Reason, "while another command of the run held host locks"):
						void++
					case strings.Contains(tx.Reason, "stopped by txexec parallel") && strings.Contains(tx.Reason, "was refused a lock on a host file it tried"):
						stopped++
					case strings.HasPrefix(tx.Reason, "conflict on "):
						conflicted++
					}
				}
				// Unless a txexec starting meanwhile recovered them first.
				assert.Positive(t, void, "the void attempts' transactions, aborted with the reason: %+v", txs)
				// The later command that held the lock may then give way:
				// stopped, if its report that it holds the lock reached
				// the driver before the refused try did; or, waiting at the
				// commit gate, by losing the conflict with what the earlier
				// command's re-run commits. Which of these happens, and
				// whether either is needed, depends on the commands'
				// timing: a run under load showed neither, with the serial
				// result. The result is the serial one and in order
				// (checked above), so the way is only logged.
				t.Logf("later attempts stopped %d, lost a conflict %d", stopped, conflicted)
			})
		}
	}
}
