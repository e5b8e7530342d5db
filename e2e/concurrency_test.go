package e2e

// Concurrency: separate txexec processes sharing one state directory, and
// processes txexec does not supervise. Transactions are held open at a
// chosen point by a script that prints "ready" and then reads a line from
// its standard input (a pipe from the test, not a path, so the wait is not
// part of what the transaction reads); no test sleeps.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// incrementScript is a read-modify-write of ./counter.
const incrementScript = `n=$(cat counter); echo $((n+1)) > counter`

// heldTx is a transaction held open by its script until release.
type heldTx struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *lineReader // the script's stdout
	errb  *bytes.Buffer
}

// startHeld starts txexec [opts] -- sh -c SCRIPT in cwd against s; the
// script prints "ready" and reads a line where it is to wait.
func (s txState) startHeld(t *testing.T, cwd, script string, opts ...string) *heldTx {
	t.Helper()
	c := s.cmd(cwd, nil, append(opts, "--", "sh", "-c", script)...)
	stdin, err := c.StdinPipe()
	require.NoError(t, err)
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	h := &heldTx{cmd: c, stdin: stdin, out: newLineReader(stdout), errb: &bytes.Buffer{}}
	c.Stderr = h.errb
	require.NoError(t, c.Start())
	t.Cleanup(func() {
		if c.ProcessState == nil {
			c.Process.Kill()
			c.Wait()
		}
	})
	return h
}

// ready waits until the script printed "ready".
func (h *heldTx) ready(t *testing.T) {
	t.Helper()
	require.Equal(t, "ready", h.out.next(t), "stderr so far: %s", h.errb.String())
}

// finish lets the script go on and waits for txexec.
func (h *heldTx) finish(t *testing.T) txResult {
	t.Helper()
	_, err := io.WriteString(h.stdin, "go\n")
	require.NoError(t, err)
	h.stdin.Close()
	for range h.out.lines {
	}
	err = h.cmd.Wait()
	return finished(t, h.cmd, err, &bytes.Buffer{}, h.errb)
}

// TestConcurrentCounter: N read-modify-write transactions of one counter,
// in separate txexec processes at once, lose no update. The same script
// run natively usually does lose some (logged, not asserted: it is a race).
func TestConcurrentCounter(t *testing.T) {
	const n = 8
	s := newTxState(t)
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "counter"), []byte("0\n"), 0o644))
	results := make([]txResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = s.tx(t, work, incrementScript, "--retry", "50") })
	}
	wg.Wait()
	retries, priority := 0, 0
	for i, r := range results {
		assert.Equal(t, 0, r.status, "writer %d: %s", i, r.stderr)
		retries += strings.Count(r.stderr, "; retrying (")
		priority += strings.Count(r.stderr, "it holds the commit lock")
	}
	assert.Equal(t, fmt.Sprintf("%d\n", n), readString(t, filepath.Join(work, "counter")), "no lost update")
	applied := 0
	for _, e := range s.log(t) {
		if e.State == "applied" {
			applied++
		}
	}
	assert.Equal(t, n, applied, "one applied transaction per writer")
	t.Logf("under txexec: counter = %d after %d writers; %d conflicts retried, %d runs took the commit lock early", n, n, retries, priority)

	// The same, natively, a few rounds: just to show the race.
	native := t.TempDir()
	lost := 0
	for range 5 {
		require.NoError(t, os.WriteFile(filepath.Join(native, "counter"), []byte("0\n"), 0o644))
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				c := exec.Command("sh", "-c", incrementScript)
				c.Dir = native
				c.Run()
			})
		}
		wg.Wait()
		var got int
		fmt.Sscan(readString(t, filepath.Join(native, "counter")), &got)
		lost += n - got
	}
	t.Logf("natively: %d of %d updates lost over 5 rounds of %d concurrent writers", lost, 5*n, n)
}

// TestConcurrentDisjointCreates: two transactions open at once creating
// different names in one directory both commit, without a retry.
func TestConcurrentDisjointCreates(t *testing.T) {
	s := newTxState(t)
	work := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(work, "dir"), 0o755))
	a := s.startHeld(t, work, "echo a > dir/a; echo ready; read x")
	b := s.startHeld(t, work, "echo b > dir/b; echo ready; read x")
	a.ready(t)
	b.ready(t) // both have staged their file; neither has committed
	ra, rb := a.finish(t), b.finish(t)
	assert.Equal(t, 0, ra.status, ra.stderr)
	assert.Equal(t, 0, rb.status, rb.stderr)
	assert.Empty(t, ra.stderr, "no conflict, no retry")
	assert.Empty(t, rb.stderr, "no conflict, no retry")
	assert.Equal(t, "a\n", readString(t, filepath.Join(work, "dir", "a")))
	assert.Equal(t, "b\n", readString(t, filepath.Join(work, "dir", "b")))
}

// TestConcurrentListingConflict: a transaction that listed a directory
// cannot commit after another transaction committed a create in it; one
// that did not list it can (the control), and so can one that listed it
// while the other changed only the contents of a file in it.
func TestConcurrentListingConflict(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		other    string // the file in dir the other transaction writes
		conflict bool
	}{
		{"ls then create", "ls dir > /dev/null; echo mine > dir/mine; echo ready; read x", "other", true},
		{"create only", "echo mine > dir/mine; echo ready; read x", "other", false},
		{"ls, another writes a file in it", "ls dir > /dev/null; echo mine > dir/mine; echo ready; read x", "there", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTxState(t)
			work := t.TempDir()
			dir := filepath.Join(work, "dir")
			require.NoError(t, os.Mkdir(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "there"), nil, 0o644))
			h := s.startHeld(t, work, tt.script)
			h.ready(t)
			other := s.tx(t, work, "echo other > dir/"+tt.other)
			require.Equal(t, 0, other.status, other.stderr)
			r := h.finish(t)
			assert.Equal(t, "other\n", readString(t, filepath.Join(dir, tt.other)))
			if !tt.conflict {
				assert.Equal(t, 0, r.status, r.stderr)
				assert.FileExists(t, filepath.Join(dir, "mine"))
				return
			}
			assert.Equal(t, 75, r.status)
			assert.Regexp(t, "^txexec: transaction 1 aborted: conflict on "+regexp.QuoteMeta(dir)+
				` \(listed, and changed by transaction 2\)`+"\n$", r.stderr)
			assert.NoFileExists(t, filepath.Join(dir, "mine"))
		})
	}
}

// TestConcurrentOutsideWriterConflict: a transaction that read a file (or
// found it absent) cannot commit once a process txexec does not supervise
// changed it; the message names the path and what happened.
func TestConcurrentOutsideWriterConflict(t *testing.T) {
	tests := []struct {
		name    string
		script  string // what the transaction reads before it waits
		outside string // the unsupervised change, run by sh in the work directory
		path    string
		why     string
	}{
		{"content", "cat f > /dev/null", "echo changed > f", "f", "modified by another process after it was read"},
		{"same size", "cat f > /dev/null", "echo FFFF > f", "f", "modified by another process after it was read"},
		{"replaced", "cat f > /dev/null", "echo new > g && mv g f", "f", "replaced by another process after it was read"},
		{"removed", "cat f > /dev/null", "rm f", "f", "removed by another process after it was read"},
		{"chmod", "stat f > /dev/null", "chmod 0600 f", "f", "its mode or owner was changed by another process after it was read"},
		{"created", "cat missing 2> /dev/null || true", "echo surprise > missing", "missing",
			"created by another process after the transaction found it absent"},
		{"listed", "ls > /dev/null", "echo x > newcomer", ".",
			"an entry was created or removed by another process after the directory was listed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTxState(t)
			work := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(work, "f"), []byte("file\n"), 0o644))
			h := s.startHeld(t, work, tt.script+"; echo ready; read x; echo done > out")
			h.ready(t)
			nativeRun(t, work, tt.outside)
			r := h.finish(t)
			assert.Equal(t, 75, r.status)
			assert.Equal(t, fmt.Sprintf("txexec: transaction 1 aborted: conflict on %s (%s)\n",
				filepath.Clean(filepath.Join(work, tt.path)), tt.why), r.stderr)
			assert.NoFileExists(t, filepath.Join(work, "out"))
		})
	}
}

// TestConcurrentGranules: a file's data and its attributes are separate
// granules (docs/semantics.md §3). A transaction that only read a file's contents
// commits after another transaction, or a process txexec does not
// supervise, changed only its mode; one that read its attributes (stat)
// does not, nor one that read its contents after another transaction
// wrote them.
func TestConcurrentGranules(t *testing.T) {
	tests := []struct {
		name   string
		script string // what the held transaction reads before it waits
		other  string // what the other changes meanwhile
		inTx   bool   // the other is a transaction (else unsupervised)
		then   string // an unsupervised change after the other's, if any
		why    string // the held transaction's conflict, "" for a commit
		// linked gives f a second name, so that a transaction changes it
		// in place rather than replacing it by a copy, and its inode
		// number is not reused for a file made later.
		linked bool
	}{
		{"read, chmod in a transaction", "cat f > /dev/null", "chmod 0600 f", true, "", "", false},
		{"read, chmod outside", "cat f > /dev/null", "chmod 0600 f", false, "", "", false},
		{"read, chown outside", "cat f > /dev/null", "chown 1:1 f", false, "", "", false},
		{"read, write in a transaction", "cat f > /dev/null", "echo more >> f", true, "",
			"its data was changed by transaction 2, committed after this one began", false},
		{"read, write outside", "cat f > /dev/null", "echo more >> f", false, "",
			"modified by another process after it was read", false},
		{"read, chmod in a transaction, then replaced outside", "cat f > /dev/null", "chmod 0600 f", true,
			"echo file > g && mv g f", "replaced by another process after it was read", true},
		{"read, chmod of a linked file in a transaction", "cat f > /dev/null", "chmod 0600 f", true, "", "", true},
		{"read, chmod in a transaction, then written outside", "cat f > /dev/null", "chmod 0600 f", true,
			"echo FILE > f", "modified by another process after it was read", false},
		{"stat, chmod in a transaction", "stat f > /dev/null", "chmod 0600 f", true, "",
			"its attributes were changed by transaction 2, committed after this one began", false},
		{"stat, write in a transaction", "stat -c %s f > /dev/null", "echo more >> f", true, "",
			"its data was changed by transaction 2, committed after this one began", false},
		{"stat, chmod outside", "stat -c %a f > /dev/null", "chmod 0600 f", false, "",
			"its mode or owner was changed by another process after it was read", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTxState(t)
			work := t.TempDir()
			f := filepath.Join(work, "f")
			require.NoError(t, os.WriteFile(f, []byte("file\n"), 0o644))
			// Times in the past, so that a change now moves them.
			require.NoError(t, os.Chtimes(f, time.Unix(1e9, 0), time.Unix(1e9, 0)))
			if tt.linked {
				require.NoError(t, os.Link(f, filepath.Join(work, "keep")))
			}
			h := s.startHeld(t, work, tt.script+"; echo ready; read x; echo done > out")
			h.ready(t)
			if tt.inTx {
				r := s.tx(t, work, tt.other)
				require.Equal(t, 0, r.status, r.stderr)
			} else {
				nativeRun(t, work, tt.other)
			}
			if tt.then != "" {
				nativeRun(t, work, tt.then)
			}
			r := h.finish(t)
			if tt.why == "" {
				assert.Equal(t, 0, r.status, r.stderr)
				assert.Empty(t, r.stderr, "no conflict")
				assert.FileExists(t, filepath.Join(work, "out"))
				return
			}
			assert.Equal(t, 75, r.status)
			assert.Equal(t, fmt.Sprintf("txexec: transaction 1 aborted: conflict on %s (%s)\n", f, tt.why), r.stderr)
			assert.NoFileExists(t, filepath.Join(work, "out"))
		})
	}
}

// TestConcurrentOutsideChangesSurvive: changes an unsupervised process
// makes in the same directory while a transaction is open survive the
// transaction's commit and its abort: commit applies the transaction's own
// changes only, abort drops them only.
func TestConcurrentOutsideChangesSurvive(t *testing.T) {
	for _, exit := range []int{0, 1} {
		t.Run(fmt.Sprintf("exit %d", exit), func(t *testing.T) {
			s := newTxState(t)
			work := t.TempDir()
			dir := filepath.Join(work, "dir")
			writeFiles(t, dir, map[string]string{
				"victim": "v\n", "existing": "e\n", "gone": "g\n", "modded": "m\n", "mine": "old\n",
			})
			h := s.startHeld(t, work, fmt.Sprintf("echo t > dir/t; rm dir/victim; echo new > dir/mine; echo ready; read x; exit %d", exit))
			h.ready(t)
			nativeRun(t, dir, "echo outside > outside; echo more >> existing; rm gone; mkdir newdir; chmod 0600 modded")
			r := h.finish(t)
			require.Equal(t, exit, r.status, r.stderr)

			// The unsupervised changes, either way.
			assert.Equal(t, "outside\n", readString(t, filepath.Join(dir, "outside")))
			assert.Equal(t, "e\nmore\n", readString(t, filepath.Join(dir, "existing")))
			assert.NoFileExists(t, filepath.Join(dir, "gone"))
			assert.DirExists(t, filepath.Join(dir, "newdir"))
			fi, err := os.Stat(filepath.Join(dir, "modded"))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
			// The transaction's own, all or nothing.
			if exit == 0 {
				assert.Equal(t, "t\n", readString(t, filepath.Join(dir, "t")))
				assert.NoFileExists(t, filepath.Join(dir, "victim"))
				assert.Equal(t, "new\n", readString(t, filepath.Join(dir, "mine")))
			} else {
				assert.NoFileExists(t, filepath.Join(dir, "t"))
				assert.Equal(t, "v\n", readString(t, filepath.Join(dir, "victim")))
				assert.Equal(t, "old\n", readString(t, filepath.Join(dir, "mine")))
			}
		})
	}
}

var (
	retryingLine = regexp.MustCompile(`^txexec: transaction [0-9]+ aborted: conflict on .*; retrying \([0-9]+ of [0-9]+\)$`)
	priorityLine = regexp.MustCompile(`^txexec: transaction [0-9]+: the command lost ([0-9]+) conflicts in a row; it holds the commit lock until it ends$`)
)

// TestConcurrentStarvation: a slow read-modify-write (the hot spot) loses
// every time a quick writer commits during its run. After it lost K=3
// times its next run takes the commit lock before it begins, and commits;
// the quick writer started during that run waits at its commit, then
// commits after it. No update is lost.
func TestConcurrentStarvation(t *testing.T) {
	const lossN = 3 // txn.DefaultPriorityAfterN
	s := newTxState(t)
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "counter"), []byte("0\n"), 0o644))

	// The hot spot's stdout and stderr in one pipe, so that txexec's
	// lines and the script's "ready" arrive in the order written.
	hot := s.cmd(work, nil, "--retry", "10", "--", "sh", "-c", "n=$(cat counter); echo ready; read x; echo $((n+1)) > counter")
	stdin, err := hot.StdinPipe()
	require.NoError(t, err)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	hot.Stdout, hot.Stderr = pw, pw
	require.NoError(t, hot.Start())
	pw.Close()
	t.Cleanup(func() {
		if hot.ProcessState == nil {
			hot.Process.Kill()
			hot.Wait()
		}
	})
	lines := newLineReader(pr)

	losses, priority, quickN := 0, false, 0
	var late *exec.Cmd // the quick writer started while the hot spot held the lock
	var lateOut bytes.Buffer
	for {
		line, ok := <-lines.lines
		if !ok {
			break
		}
		switch {
		case retryingLine.MatchString(line):
			losses++
		case priorityLine.MatchString(line):
			priority = true
			assert.Equal(t, fmt.Sprint(lossN), priorityLine.FindStringSubmatch(line)[1])
		case line == "ready" && !priority:
			// A quick writer commits while the hot spot holds its snapshot.
			quickN++
			r := s.tx(t, work, incrementScript, "--retry", "10")
			require.Equal(t, 0, r.status, "quick writer %d: %s", quickN, r.stderr)
			_, err := io.WriteString(stdin, "go\n")
			require.NoError(t, err)
		case line == "ready" && priority:
			// This one has to wait at its commit for the hot spot.
			quickN++
			late = s.cmd(work, nil, "--retry", "10", "--", "sh", "-c", incrementScript)
			late.Stdout, late.Stderr = &lateOut, &lateOut
			require.NoError(t, late.Start())
			// Once its command has ended (its status is recorded) it is
			// at its commit: had it not to wait, it would now commit
			// before the hot spot, which would lose a fourth time.
			waitFor(t, "the quick writer to reach its commit", func() bool {
				applied := 0
				for _, e := range s.log(t) {
					if len(e.Command) != 3 || e.Command[2] != incrementScript {
						continue
					}
					if e.State == "running" && e.Status != nil {
						return true
					}
					if e.State == "applied" {
						applied++
					}
				}
				return applied == quickN // it did not wait: the hot spot will lose
			})
			_, err := io.WriteString(stdin, "go\n")
			require.NoError(t, err)
			stdin.Close()
		case strings.HasPrefix(line, "sh: "):
			// The script's own complaint when the view refuses to go on
			// from a snapshot the host changed under it (ESTALE): the
			// transaction is doomed, and retried.
			t.Logf("hot spot: %s", line)
		default:
			t.Errorf("unexpected line from the hot spot: %q", line)
		}
		if losses > lossN {
			t.Fatalf("the hot spot lost %d times: it should have taken the commit lock after %d", losses, lossN)
		}
	}
	hr := finished(t, hot, hot.Wait(), &bytes.Buffer{}, &bytes.Buffer{})
	require.Equal(t, 0, hr.status, "the hot spot must commit")
	assert.Equal(t, lossN, losses)
	assert.True(t, priority, "the hot spot took the commit lock")
	require.NotNil(t, late)
	lr := finished(t, late, late.Wait(), &bytes.Buffer{}, &bytes.Buffer{})
	assert.Equal(t, 0, lr.status, "the writer that waited commits after the hot spot: %s", lateOut.String())
	assert.Equal(t, lossN+1, quickN)
	assert.Equal(t, fmt.Sprintf("%d\n", quickN+1), readString(t, filepath.Join(work, "counter")), "no lost update")
}
