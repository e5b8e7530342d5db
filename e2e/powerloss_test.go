package e2e

// Power loss: transactions on a crashfs mount (internal/crashfs), a FUSE
// file system that keeps what was not fsynced — data, attributes and
// names — apart and drops it at a power cut. A commit txexec reported
// must survive a cut; a cut at any point of a commit, then txexec
// recover, must leave all or nothing; a failing fsync must never be
// reported as a success.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/crashfs"
	"txexec/internal/testenv"
)

// needCrashfs skips the test (fails it in CI) where crashfs cannot be
// mounted.
func needCrashfs(t *testing.T) {
	t.Helper()
	if why := crashfs.Available(); why != "" {
		testenv.SkipOrFail(t, "%s", why)
	}
}

// crashfsMount mounts an empty crashfs for the test.
func crashfsMount(t *testing.T) *crashfs.Mount {
	t.Helper()
	needCrashfs(t)
	m, err := crashfs.New(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Close()) })
	return m
}

// stateWhere is where a power-loss test keeps the state directory: on a
// disk the cut spares, or on the crashfs mount with the data, where the
// store's own durability is tested too.
type stateWhere string

const (
	stateOnDisk  stateWhere = "state-on-disk"
	stateOnMount stateWhere = "state-on-mount"
)

func (w stateWhere) state(t *testing.T, m *crashfs.Mount, name string) txState {
	if w == stateOnMount {
		return txState{dir: filepath.Join(m.Dir, name)}
	}
	return txState{dir: filepath.Join(t.TempDir(), name)}
}

// powerlossN is how many trials a power-loss test makes: the short count
// in make test, the long one in make soak (TXEXEC_SOAK=1).
func powerlossN(short, soak int) int {
	if os.Getenv("TXEXEC_SOAK") == "1" {
		return soak
	}
	return short
}

// crashfsRun runs txexec ARGS in cwd, on m; when boundary operation k+1
// of the mount arrives (k >= 0), the power is cut there: txexec is killed
// and nothing it does afterwards reaches the mount. It returns the run,
// the boundary operations it made (crashfs.Mount.Boundaries), and
// whether the cut came.
//
// The test process serves the mount, so it must not enter it while it
// forks: Go's fork keeps its processor until the child has exec'd, a
// garbage collection then waits for that processor, and a child's chdir
// into the mount waits for the server, which waits for the collection.
// env -C enters cwd after the exec.
func crashfsRun(t *testing.T, s txState, m *crashfs.Mount, k int, cwd string, args ...string) (r txResult, ops []string, cut bool) {
	t.Helper()
	c := exec.Command("env", append([]string{"-C", cwd, txexecBin}, args...)...)
	c.Dir = "/"
	c.Env = append(s.env(), "GOTRACEBACK=all")
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	started := make(chan *os.Process, 1)
	// The callback runs in the file system's request: txexec has started
	// (it is asking), so Start has returned or is about to.
	m.CutAtBoundary(k, func() {
		p := <-started
		p.Kill()
	})
	require.NoError(t, c.Start())
	started <- c.Process
	watchdog := time.AfterFunc(txexecRunLimit, func() { c.Process.Signal(syscall.SIGABRT) })
	err := c.Wait()
	if !watchdog.Stop() {
		t.Fatalf("txexec %q did not finish within %v; its stacks:\n%s", c.Args, txexecRunLimit, errb.String())
	}
	r = finished(t, c, err, &out, &errb)
	ops, cut = m.Boundaries()
	m.CutAtBoundary(-1, nil)
	return r, ops, cut
}

// crashfsTx runs sh -c script in a transaction in cwd, on m.
func crashfsTx(t *testing.T, s txState, m *crashfs.Mount, cwd, script string) txResult {
	t.Helper()
	r, _, _ := crashfsRun(t, s, m, -1, cwd, "--", "sh", "-c", script)
	return r
}

// TestCrashPowerLossAfterReportedCommits: a power cut right after each of
// many commits txexec reported (exit 0) loses none of them. The state
// directory is on a spared disk, or on the crashfs mount itself.
func TestCrashPowerLossAfterReportedCommits(t *testing.T) {
	ref := crashReference(t)
	n := powerlossN(10, 60) // per variant: 20 in make test, 120 in make soak
	for _, where := range []stateWhere{stateOnDisk, stateOnMount} {
		t.Run(string(where), func(t *testing.T) {
			m := crashfsMount(t)
			s := where.state(t, m, "state")
			var lost []string
			leftAreas := 0
			for i := range n {
				work := filepath.Join(m.Dir, fmt.Sprint(i))
				crashFixture(t, work)
				m.Sync()
				r := crashfsTx(t, s, m, work, crashScript)
				require.Equal(t, 0, r.status, "commit %d: %s", i, r.stderr)
				require.NoError(t, m.PowerCut())
				recoverAndCheck(t, s)
				if tree := relabel(treeState(t, work)); !assert.ObjectsAreEqual(ref.post, tree) {
					lost = append(lost, fmt.Sprintf("commit %d (%s):\n%s", i, ref.whichState(tree), strings.Join(tree, "\n")))
				}
				if areas := areasIn(t, m.Dir); len(areas) > 0 {
					// Counted once, then removed by hand.
					leftAreas++
					for _, a := range areas {
						require.NoError(t, os.RemoveAll(filepath.Join(m.Dir, a)))
					}
				}
			}
			if len(lost) > 0 {
				t.Errorf("%d of %d commits reported durable were lost in a power cut; the first: %s", len(lost), n, lost[0])
			}
			// docs/semantics.md: a staging area is recorded before it is
			// made, "so that none is left behind whenever the crash came".
			assert.Zero(t, leftAreas, "of %d commits, %d left their staging area at the mount's root after the cut and recover", n, leftAreas)
		})
	}
}

// manyFilesFixture makes the tree manyFilesScript(n) changes: half of
// the n files it writes exist, and a few more files and a directory.
func manyFilesFixture(t testing.TB, dir string, n int) {
	t.Helper()
	files := map[string]string{"keep": "keep\n", "moved": "moved\n", "gone": "gone\n", "mode": "mode\n", "sub/x": "x\n"}
	for i := range n / 2 {
		files[fmt.Sprintf("f%03d", i)] = fmt.Sprintf("old %d\n", i)
	}
	writeFiles(t, dir, files)
}

// manyFilesScript writes n files (a commit of n files: half overwrite
// old ones, half are new), and renames, removes, makes a directory and
// changes a mode.
func manyFilesScript(n int) string {
	return fmt.Sprintf(`set -e
i=0; while [ $i -lt %d ]; do f=$(printf 'f%%03d' $i); echo "new $i" > $f; i=$((i+1)); done
mv moved renamed
rm gone
mkdir made
echo inside > made/g
chmod 0600 mode
chmod 0700 sub`, n)
}

// boundaryStates are the trees before and after manyFilesScript(n), from
// a native run on a copy.
func boundaryStates(t *testing.T, n int) crashStates {
	t.Helper()
	base := t.TempDir()
	d := filepath.Join(base, "native")
	manyFilesFixture(t, d, n)
	c := crashStates{pre: relabel(treeState(t, d))}
	nativeRun(t, d, manyFilesScript(n))
	c.post = relabel(treeState(t, d))
	return c
}

// opCounts summarizes boundary operations: each kind with its count, in
// the order of first appearance.
func opCounts(ops []string) string {
	counts := map[string]int{}
	var kinds []string
	for _, op := range ops {
		if counts[op] == 0 {
			kinds = append(kinds, op)
		}
		counts[op]++
	}
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// TestCrashPowerLossAtEveryBoundary runs one commit of many files, and
// then the same commit again once for every boundary operation k of its
// run (fsyncs, renames, unlinks, attribute changes on the mount), the
// power cut before operation k+1: after txexec recover the tree is
// exactly as before or exactly as after, and as after whenever txexec
// had reported the commit. make test enumerates the boundaries of a
// 20-file commit from the first fsync on (a cut at any earlier one leaves
// the same durable state, the fixture's, and a transaction that had not
// synced anything, so not committed); make soak those of a 200-file
// commit, all of them with the state directory on a spared disk, and from
// the first fsync on with the state directory on the mount.
func TestCrashPowerLossAtEveryBoundary(t *testing.T) {
	needCrashfs(t)
	soak := os.Getenv("TXEXEC_SOAK") == "1"
	n := powerlossN(20, 200)
	ref := boundaryStates(t, n)
	script := manyFilesScript(n)
	// The store on the mount too, in the short run as well: a cut there
	// once lost a whole new state directory (its entry was never synced).
	wheres := []stateWhere{stateOnDisk, stateOnMount}
	for _, where := range wheres {
		t.Run(string(where), func(t *testing.T) {
			// trial runs the commit on a new mount with the cut at k
			// (-1: none) and returns the boundary operations of the run.
			trial := func(k int) (ops []string, outcome string) {
				m, err := crashfs.New(t.TempDir())
				require.NoError(t, err)
				defer func() { assert.NoError(t, m.Close()) }()
				work := filepath.Join(m.Dir, "work")
				manyFilesFixture(t, work, n)
				m.Sync()
				s := where.state(t, m, "state")
				r, ops, cut := crashfsRun(t, s, m, k, work, "--", "sh", "-c", script)
				reported := r.status == 0
				if !reported && !cut {
					t.Fatalf("cut at %d: txexec exited %d without a cut: %s", k, r.status, r.stderr)
				}
				require.NoError(t, m.PowerCut())
				recoverAndCheck(t, s)
				tree := relabel(treeState(t, work))
				switch state := ref.whichState(tree); {
				case state == "":
					return ops, "neither the tree before nor the tree after:\n" + strings.Join(tree, "\n")
				case reported && state != "post":
					return ops, "txexec reported the commit, but the tree is the state before"
				case reported:
					return ops, "reported"
				default:
					return ops, state
				}
			}
			ops, outcome := trial(-1)
			require.Equal(t, "reported", outcome, "the commit without a cut")
			first := slices.IndexFunc(ops, func(op string) bool { return strings.HasPrefix(op, "f") })
			require.GreaterOrEqual(t, first, 0, "a durable commit must fsync on the mount: %s", opCounts(ops))
			t.Logf("a commit of %d files: %d boundary operations (%s), the first fsync is number %d",
				n, len(ops), opCounts(ops), first+1)
			from := first
			if soak && where == stateOnDisk {
				from = 0
			}
			counts := map[string]int{}
			var bad []string
			for k := from; k <= len(ops); k++ {
				if (k-from)%200 == 199 {
					t.Logf("cut %d of %d", k-from+1, len(ops)+1-from)
				}
				_, outcome := trial(k)
				switch outcome {
				case "pre", "post", "reported":
					counts[outcome]++
				default:
					bad = append(bad, fmt.Sprintf("cut after boundary %d: %s", k, outcome))
				}
			}
			t.Logf("%d cuts (after boundaries %d..%d): %d left the state before, %d the state after (recovered), %d came after the reported commit",
				len(ops)+1-from, from, len(ops), counts["pre"], counts["post"], counts["reported"])
			if len(bad) > 0 {
				t.Errorf("%d of %d cuts did not leave all or nothing; the first: %s", len(bad), len(ops)+1-from, bad[0])
			}
		})
	}
}

// abortedLine is txexec's line for a transaction it aborted.
var abortedLine = regexp.MustCompile(`(?m)^txexec: transaction 1 aborted: .+$`)

// TestCrashPowerLossFsyncEIO fails each fsync of a commit in turn with EIO.
// txexec never reports that commit (exit 0). Failed before the commit
// point, the transaction aborts with a reason and the tree is untouched;
// after it, txexec recover finishes the commit, also after a power cut.
func TestCrashPowerLossFsyncEIO(t *testing.T) {
	needCrashfs(t)
	ref := crashReference(t)
	// trial runs crashScript on a new mount with fault armed, and checks
	// the outcome; it returns the fsyncs asked.
	trial := func(t *testing.T, fault crashfs.FsyncFault) (fsyncs int, aborted bool) {
		m, err := crashfs.New(t.TempDir())
		require.NoError(t, err)
		defer func() { assert.NoError(t, m.Close()) }()
		work := filepath.Join(m.Dir, "work")
		crashFixture(t, work)
		m.Sync()
		s := newTxState(t)
		m.FailFsync(fault)
		r := crashfsTx(t, s, m, work, crashScript)
		fsyncs, failed := m.Fsyncs()
		m.FailFsync(crashfs.FsyncFault{})
		if fault == (crashfs.FsyncFault{}) {
			require.Equal(t, 0, r.status, r.stderr)
			return fsyncs, false
		}
		if failed == 0 {
			return fsyncs, false // this run made fewer fsyncs
		}
		require.NotEqual(t, 0, r.status, "an fsync failed (%+v), yet txexec reported the commit; stderr:\n%s", fault, r.stderr)
		aborted = s.entry(t, 1).State == "aborted"
		if aborted {
			assert.Regexp(t, abortedLine, r.stderr, "the abort and its reason")
			t.Log(abortedLine.FindString(r.stderr))
			assert.Equal(t, ref.pre, relabel(treeState(t, work)), "aborted: the tree is untouched")
		}
		require.NoError(t, m.PowerCut())
		recoverAndCheck(t, s)
		want := ref.post
		if aborted {
			want = ref.pre
		}
		assert.Equal(t, want, relabel(treeState(t, work)), "after a power cut and recover (aborted: %v); stderr of the run:\n%s", aborted, r.stderr)
		return fsyncs, aborted
	}
	f0, _ := trial(t, crashfs.FsyncFault{})
	require.Positive(t, f0, "a durable commit must fsync on this file system (syncfs does not reach FUSE)")
	aborts := 0
	for nth := 1; nth <= f0; nth++ {
		t.Run(fmt.Sprintf("fsync-%d-of-%d", nth, f0), func(t *testing.T) {
			if _, aborted := trial(t, crashfs.FsyncFault{Nth: nth}); aborted {
				aborts++
			}
		})
	}
	t.Logf("%d fsyncs: %d failures aborted the transaction, %d came after its commit point", f0, aborts, f0-aborts)
}

// TestCrashPowerLossFsyncEIOAfterCommitPoint: every fsync of the changed
// directory fails, so the commit cannot be made durable after its commit
// point: txexec does not report it, and neither does recover while the
// fault lasts; once it is gone, recover finishes the commit durably.
func TestCrashPowerLossFsyncEIOAfterCommitPoint(t *testing.T) {
	ref := crashReference(t)
	m := crashfsMount(t)
	work := filepath.Join(m.Dir, "work")
	crashFixture(t, work)
	m.Sync()
	s := newTxState(t)
	m.FailFsync(crashfs.FsyncFault{Path: "work"})
	r := crashfsTx(t, s, m, work, crashScript)
	_, failed := m.Fsyncs()
	require.Positive(t, failed, "the write-through must fsync the directory it changed")
	assert.NotEqual(t, 0, r.status, "the changed directory could not be fsynced, yet txexec reported the commit:\n%s", r.stderr)
	assert.NotRegexp(t, abortedLine, r.stderr, "the fault comes after the commit point")

	rec := s.run(t, "/", nil, "recover")
	assert.NotEqual(t, 0, rec.status, "recover cannot finish while the fsync fails: %s%s", rec.stdout, rec.stderr)
	m.FailFsync(crashfs.FsyncFault{})
	rec = s.run(t, "/", nil, "recover")
	require.Equal(t, 0, rec.status, "recover once the fault is gone: %s%s", rec.stdout, rec.stderr)
	assert.Equal(t, "applied", s.entry(t, 1).State)
	require.NoError(t, m.PowerCut())
	recoverAndCheck(t, s)
	assert.Equal(t, ref.post, relabel(treeState(t, work)))
}
