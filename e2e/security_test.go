package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// unprivileged is the prefix that runs a command as uid/gid 1000 with no
// supplementary groups.
var unprivileged = []string{"setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups"}

// TestUnprivilegedErrnos: a process that drops to uid 1000 under a root
// txexec gets exactly the errno Linux gives it: the supervisor acts with the
// caller's credentials, never its own (issue 2, "Must hold").
func TestUnprivilegedErrnos(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "setpriv")
	fixtures := t.TempDir()
	probe := buildC(t, fixtures, "errno_probe", "errno_probe")
	openToOthers(t, fixtures)

	// Each step: operation, path (relative to the work directory unless
	// absolute), the errno Linux gives uid 1000 ("ok" for success).
	steps := []struct{ op, path, want string }{
		{"write", "root600", "EACCES"},
		{"read", "root600", "EACCES"},
		{"stat", "root600", "ok"},
		{"read", "root644", "ok"},
		{"write", "root644", "EACCES"},
		{"create", "rootdir/new", "EACCES"},
		{"mkdir", "rootdir/sub", "EACCES"},
		{"unlink", "root644", "EACCES"},
		{"chmod", "root644", "EPERM"},
		{"chown", "root644", "EPERM"},
		{"utime", "root644", "EACCES"},
		{"read", "rootdir/inner", "ok"},
		{"read", "private/file", "EACCES"},
		{"stat", "private/file", "EACCES"},
		{"read", "/etc/shadow", "EACCES"},
		{"create", "userdir/mine", "ok"},
		{"chmod", "userdir/mine", "ok"},
	}
	var script, want strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&script, "%s %s %s\n", probe, s.op, s.path)
		fmt.Fprintf(&want, "%s %s: %s\n", s.op, s.path, s.want)
	}
	setup := func(t *testing.T, dir string) {
		writeFiles(t, dir, map[string]string{
			"root600":       "secret\n",
			"root644":       "public\n",
			"rootdir/inner": "inner\n",
			"private/file":  "hidden\n",
			"userdir/":      "",
		})
		require.NoError(t, os.Chmod(filepath.Join(dir, "root600"), 0o600))
		require.NoError(t, os.Chmod(filepath.Join(dir, "private"), 0o700))
		require.NoError(t, os.Chown(filepath.Join(dir, "userdir"), 1000, 1000))
		openToOthers(t, dir)
	}
	if _, err := os.Stat("/etc/shadow"); err != nil {
		testenv.SkipOrFail(t, "/etc/shadow: %v", err)
	}
	p := parity{
		name:  "unprivileged errnos",
		argv:  append(append([]string{}, unprivileged...), "sh", "-c", script.String()),
		setup: setup,
	}
	t.Run("native gives the expected errnos", func(t *testing.T) {
		dir := t.TempDir()
		setup(t, dir)
		got := run(t, native, command{Argv: p.argv, Dir: dir})
		require.Equal(t, want.String(), got.Stdout, "stderr: %s", got.Stderr)
	})
	t.Run("txexec gives the same", p.check)
}

// openRaceResult is open_race's summary line.
type openRaceResult struct {
	allowed, secret, eacces, enoent, other int
}

var openRaceLine = regexp.MustCompile(`^allowed=([0-9]+) secret=([0-9]+) EACCES=([0-9]+) ENOENT=([0-9]+) other=([0-9]+)\n$`)

func parseOpenRace(t *testing.T, out string) openRaceResult {
	t.Helper()
	m := openRaceLine.FindStringSubmatch(out)
	require.NotNil(t, m, "open_race output %q", out)
	n := make([]int, 5)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return openRaceResult{n[0], n[1], n[2], n[3], n[4]}
}

// TestOpenPathRace: thread A opens the path in a buffer while thread B keeps
// flipping it between an allowed file and a secret one. The supervisor reads
// the path once and acts on that copy (never CONTINUE after reading it), so
// no open may ever reach the secret, whatever the timing:
//   - as uid 1000, the secret is root's 0600 file (Linux also refuses it:
//     the supervisor must give the same EACCES, and never open it with its
//     own privileges);
//   - as root in a transaction that deleted the secret, only the
//     supervisor's view stands between the open and the host's file, which
//     is still there.
func TestOpenPathRace(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "setpriv")
	fixtures := t.TempDir()
	race := buildC(t, fixtures, "open_race", "open_race")
	openToOthers(t, fixtures)
	const iterations = "20000"

	setup := func(t *testing.T, dir string) {
		writeFiles(t, dir, map[string]string{"ok": "allowed\n", "no": "SECRET\n"})
		require.NoError(t, os.Chmod(filepath.Join(dir, "no"), 0o600))
		openToOthers(t, dir)
	}
	cases := []struct {
		name   string
		script func(dir string) []string
		modes  []mode
		// refused is the errno every open of the secret must get.
		refused func(r openRaceResult) int
	}{
		{
			name: "unprivileged caller",
			script: func(dir string) []string {
				return append(append([]string{}, unprivileged...), race, dir+"/ok", dir+"/no", iterations)
			},
			modes:   []mode{native, passthrough, transaction},
			refused: func(r openRaceResult) int { return r.eacces },
		},
		{
			name: "secret deleted in the transaction",
			script: func(dir string) []string {
				return []string{"sh", "-c", `rm "$1/no" && exec "$2" "$1/ok" "$1/no" "$3"`, "sh", dir, race, iterations}
			},
			modes:   []mode{native, transaction},
			refused: func(r openRaceResult) int { return r.enoent },
		},
	}
	for _, c := range cases {
		for _, m := range c.modes {
			t.Run(c.name+"/"+m.String(), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "race")
				require.NoError(t, os.Mkdir(dir, 0o755))
				setup(t, dir)
				// Roll the transaction back: the host's secret must
				// survive it untouched as well.
				got := run(t, m, command{Argv: c.script(dir), Dir: dir, TxArgs: []string{"--on-exit=abort"}})
				t.Logf("%s: %s", m, strings.TrimSpace(got.Stdout))
				require.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
				r := parseOpenRace(t, got.Stdout)
				assert.Zero(t, r.secret, "an open reached the secret")
				assert.Zero(t, r.other, "opens that returned something else (stderr says what):\n%s", got.Stderr)
				assert.Positive(t, r.allowed, "the allowed file was opened")
				assert.Positive(t, c.refused(r), "the secret was tried and refused: the race was exercised")
				if m == transaction {
					b, err := os.ReadFile(filepath.Join(dir, "no"))
					require.NoError(t, err, "the host's secret is still there after the aborted transaction")
					assert.Equal(t, "SECRET\n", string(b))
				}
			})
		}
	}
}

var (
	identLine  = regexp.MustCompile(`^pid=([0-9]+) ident=([ab])$`)
	raceSum    = regexp.MustCompile(`^ok=([0-9]+) killed=([0-9]+) failed=([0-9]+) other=([0-9]+)$`)
	execPlan   = regexp.MustCompile(`^\[pid ([0-9]+)\] execve\(.*\) = 0 \(-> (.*)\)$`)
	killedLine = regexp.MustCompile(`^txexec: killed pid ([0-9]+): it executed something other than (.*) \(its path was changed during execve\)$`)
)

// TestExecPathRace: in each of N children, thread A execs the path in a
// buffer that thread B keeps flipping between two programs, and B also
// scribbles the other program's path where the supervisor writes its
// rewritten copy of the path. Every exec that runs must run the program the
// supervisor checked (the program prints its identity; --trace says what was
// checked), and a process that ended up with the other executable must be
// killed before it prints anything, with a log line.
func TestExecPathRace(t *testing.T) {
	fixtures := t.TempDir()
	race := buildC(t, fixtures, "exec_race", "exec_race")
	progs := filepath.Join(fixtures, "progs")
	require.NoError(t, os.Mkdir(progs, 0o755))
	progA := buildC(t, progs, "ident", "a", `-DIDENT="a"`)
	progB := buildC(t, progs, "ident", "b", `-DIDENT="b"`)
	const children = 200

	for _, m := range []mode{native, passthrough, transaction} {
		t.Run(m.String(), func(t *testing.T) {
			traceFile := filepath.Join(t.TempDir(), "trace.txt")
			got := run(t, m, command{
				Argv:   []string{race, strconv.Itoa(children), progA, progB},
				Dir:    t.TempDir(),
				TxArgs: []string{"--trace=" + traceFile},
			})
			require.Equal(t, 0, got.Status, "stderr:\n%s", got.Stderr)
			lines := strings.Split(strings.TrimSuffix(got.Stdout, "\n"), "\n")
			sum := raceSum.FindStringSubmatch(lines[len(lines)-1])
			require.NotNil(t, sum, "summary line; stdout:\n%s", got.Stdout)
			ok, _ := strconv.Atoi(sum[1])
			killed, _ := strconv.Atoi(sum[2])
			failed, _ := strconv.Atoi(sum[3])
			other, _ := strconv.Atoi(sum[4])
			t.Logf("%s: %s", m, lines[len(lines)-1])
			assert.Equal(t, children, ok+killed+failed+other)
			assert.Zero(t, failed, "no execve failed")
			assert.Zero(t, other, "every child either ran a program or was killed")

			idents := map[int]string{}
			for _, l := range lines[:len(lines)-1] {
				mm := identLine.FindStringSubmatch(l)
				if assert.NotNil(t, mm, "unexpected output line %q", l) {
					pid, _ := strconv.Atoi(mm[1])
					idents[pid] = mm[2]
				}
			}
			assert.Len(t, idents, ok, "one identity line per child that ran")
			if m == native {
				assert.Zero(t, killed, "natively nothing kills the children")
				return
			}

			b, err := os.ReadFile(traceFile)
			require.NoError(t, err)
			planned := map[int]string{}
			for _, l := range strings.Split(string(b), "\n") {
				if mm := execPlan.FindStringSubmatch(l); mm != nil {
					pid, _ := strconv.Atoi(mm[1])
					planned[pid] = mm[2]
				}
			}
			for pid, id := range idents {
				want := map[string]string{"a": progA, "b": progB}[id]
				assert.Equal(t, want, planned[pid], "pid %d ran %s: the supervisor must have checked exactly that file", pid, id)
			}
			nkilled := 0
			for _, l := range strings.Split(got.Stderr, "\n") {
				mm := killedLine.FindStringSubmatch(l)
				if mm == nil {
					continue
				}
				nkilled++
				pid, _ := strconv.Atoi(mm[1])
				assert.NotContains(t, idents, pid, "killed pid %d must not have run its program", pid)
				assert.Contains(t, []string{progA, progB}, mm[2])
				assert.Equal(t, mm[2], planned[pid], "the log names the file the supervisor checked")
			}
			assert.Equal(t, killed, nkilled, "one log line per killed child; stderr:\n%s", got.Stderr)
			if killed == 0 {
				t.Logf("%s: no exec hit the window between the rewrite and the kernel's read this time; the kill path was not exercised", m)
			}
		})
	}
}

// TestExecThroughADescriptorAsOtherUser: a root process opens a program in
// a directory only root can search, becomes uid 1000 and executes it
// through the descriptor (execveat AT_EMPTY_PATH). Linux walks no
// directory then; nor may txexec, which hands the kernel the descriptor
// (/proc/self/fd/N), and the process is named after the file.
func TestExecThroughADescriptorAsOtherUser(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	work := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	openToOthers(t, work)
	fexec := buildC(t, work, "fexec_as_user", "fexec")
	private := filepath.Join(work, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	prog := filepath.Join(private, "privsh")
	b, err := os.ReadFile("/bin/sh")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(prog, b, 0o755))
	require.NoError(t, os.Chmod(prog, 0o755))
	for _, m := range []mode{native, transaction} {
		got := run(t, m, command{Argv: []string{fexec, prog, "privsh", "-c", `echo $(id -u) $(cat /proc/$$/comm)`},
			Dir: work, Env: []string{"TXEXEC_STATE_DIR=" + state}})
		assert.Equal(t, 0, got.Status, "%s: stderr:\n%s", m, got.Stderr)
		assert.Equal(t, "1000 privsh\n", got.Stdout, "%s", m)
	}
}

// TestExecStagedAsOtherUser: under a root txexec, a process running as
// another user executes a program the transaction made — an ELF binary,
// whose path the kernel walks for that user into the staging area.
func TestExecStagedAsOtherUser(t *testing.T) {
	testenv.NeedRoot(t, "txexec supervises as root")
	requireTools(t, "setpriv")
	work := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	openToOthers(t, work)
	openToOthers(t, filepath.Dir(state))
	script := `cp /bin/echo ./myecho && chmod 755 ./myecho && setpriv --reuid=1000 --regid=1000 --clear-groups sh -c './myecho ran as $(id -u)'`
	for _, m := range []mode{native, transaction} {
		dir := filepath.Join(work, m.String())
		require.NoError(t, os.Mkdir(dir, 0o755))
		got := run(t, m, command{Argv: []string{"sh", "-c", script}, Dir: dir, Env: []string{"TXEXEC_STATE_DIR=" + state}})
		assert.Equal(t, 0, got.Status, "%s: stderr:\n%s", m, got.Stderr)
		assert.Equal(t, "ran as 1000\n", got.Stdout, "%s", m)
	}
}
