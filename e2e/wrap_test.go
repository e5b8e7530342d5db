package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"txexec/internal/testenv"
)

// wrapScene is what the wrap tests run in, all under one root-owned
// temporary directory on a mount without nosuid: a copy of txexec and its
// launcher template, the wrapped directory and a state directory (given
// to txexec wrap, so that nothing goes to /usr/lib/txexec or
// /var/lib/txexec), the set-user-ID-root victim (testdata/wrap_victim.c),
// a root-owned secret, and a directory of uid 1000's, the attacker's.
type wrapScene struct {
	root, txexec, wrapped, state string
	victim, secret, user         string
}

const secretText = "root's secret\n"

func newWrapScene(t *testing.T) wrapScene {
	t.Helper()
	testenv.NeedRoot(t, "wrap installs set-user-ID-root programs")
	requireTools(t, "setpriv", "gcc", "bash")
	root := t.TempDir()
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(root, &fs))
	if fs.Flags&unix.ST_NOSUID != 0 {
		testenv.SkipOrFail(t, "%s is on a nosuid mount: set-user-ID bits have no effect there", root)
	}
	_, err := os.Stat(launcherBin)
	require.NoError(t, err, "the launcher template (see TestMain's message)")
	s := wrapScene{
		root: root, txexec: filepath.Join(root, "bin", "txexec"),
		wrapped: filepath.Join(root, "wrapped"), state: filepath.Join(root, "state"),
		secret: filepath.Join(root, "secret"), user: filepath.Join(root, "user"),
	}
	require.NoError(t, os.Mkdir(filepath.Join(root, "bin"), 0o755))
	require.NoError(t, exec.Command("cp", txexecBin, s.txexec).Run())
	require.NoError(t, exec.Command("cp", launcherBin, filepath.Join(root, "bin", "txexec-launcher")).Run())
	s.victim = buildC(t, root, "wrap_victim", "victim")
	require.NoError(t, unix.Chmod(s.victim, 0o4755))
	require.NoError(t, os.WriteFile(s.secret, []byte(secretText), 0o644))
	require.NoError(t, os.Mkdir(s.user, 0o755))
	require.NoError(t, os.Chown(s.user, 1000, 1000))
	openToOthers(t, root)
	return s
}

// txexecRoot runs this scene's txexec as root with args after the
// subcommand's name.
func (s wrapScene) txexecRoot(t *testing.T, sub string, args ...string) result {
	t.Helper()
	argv := append([]string{s.txexec, sub}, args...)
	return run(t, native, command{Argv: argv})
}

// wrap wraps paths into the scene's wrapped directory, recording its state
// directory.
func (s wrapScene) wrap(t *testing.T, paths ...string) result {
	t.Helper()
	return s.txexecRoot(t, "wrap", append([]string{"--wrapped-dir=" + s.wrapped, "--state-dir=" + s.state}, paths...)...)
}

// asUser runs argv as uid 1000, from the attacker's directory.
func (s wrapScene) asUser(t *testing.T, env []string, argv ...string) result {
	t.Helper()
	return run(t, native, command{Argv: append(append([]string{}, unprivileged...), argv...), Env: env, Dir: s.user})
}

// attack runs six rounds of testdata/wrap_attack.sh as uid 1000 and
// returns each round's exit status, the output, and how many rounds wrote
// to the secret.
func (s wrapScene) attack(t *testing.T) (statuses []string, out string, exploited int) {
	t.Helper()
	require.NoError(t, os.WriteFile(s.secret, []byte(secretText), 0o644))
	script, err := filepath.Abs(filepath.Join("testdata", "wrap_attack.sh"))
	require.NoError(t, err)
	got := s.asUser(t, nil, "bash", script, s.victim, s.user, s.secret)
	require.Equal(t, 0, got.Status, got.Stdout+got.Stderr)
	for _, m := range regexp.MustCompile(`(?m)^status (\d+)$`).FindAllStringSubmatch(got.Stdout, -1) {
		statuses = append(statuses, m[1])
	}
	require.Len(t, statuses, 6, got.Stdout)
	b, err := os.ReadFile(s.secret)
	require.NoError(t, err)
	return statuses, got.Stdout, strings.Count(string(b), "written through round")
}

// TestWrapSetuidProgram: a set-user-ID-root check-then-use program, run
// directly by uid 1000 while uid 1000 swaps the checked file for a symlink
// to a root-owned file as soon as the program says it has checked it, is
// exploited natively and never once wrapped: each wrapped run's open fails
// (ESTALE), and the transaction aborts on the conflict with exit status 75
// (issue 21, "Must hold"). Without an attack a wrapped run works as
// natively, with the same real and effective uid; the launcher ignores
// LD_PRELOAD and PATH, refuses files others can write, and unwrap puts the
// original back.
func TestWrapSetuidProgram(t *testing.T) {
	s := newWrapScene(t)
	original, err := os.ReadFile(s.victim)
	require.NoError(t, err)

	var nativeIDs string
	t.Run("native", func(t *testing.T) {
		statuses, out, exploited := s.attack(t)
		t.Logf("native rounds: %v, the secret written %d times", statuses, exploited)
		assert.GreaterOrEqual(t, exploited, 4, out)
		got := s.asUser(t, nil, s.victim, "ids")
		require.Equal(t, 0, got.Status, got.Stderr)
		nativeIDs = got.Stdout
		assert.Equal(t, "0\n1000\n", nativeIDs)
	})

	got := s.wrap(t, s.victim)
	require.Equal(t, 0, got.Status, got.Stderr)
	entry := filepath.Join(s.wrapped, strings.ReplaceAll(strings.TrimPrefix(s.victim, "/"), "/", "-"))
	moved := filepath.Join(entry, "victim")
	assert.Equal(t, "wrapped "+s.victim+" (original in "+moved+")\n", got.Stdout)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(s.victim, &st))
	assert.Equal(t, uint32(0o4755), st.Mode&0o7777, "the launcher: set-user-ID root")
	assert.Equal(t, uint32(0), st.Uid)
	require.NoError(t, unix.Stat(moved, &st))
	assert.Equal(t, uint32(0o755), st.Mode&0o7777, "the original, its set-ID bit removed")
	b, err := os.ReadFile(moved)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(original, b), "the original moved aside unchanged")

	t.Run("wrapping twice is refused", func(t *testing.T) {
		before, err := os.ReadFile(s.victim)
		require.NoError(t, err)
		got := s.wrap(t, s.victim)
		assert.Equal(t, 1, got.Status)
		assert.Equal(t, "txexec: wrap "+s.victim+": already wrapped (txexec unwrap it first to change how)\n", got.Stderr)
		after, err := os.ReadFile(s.victim)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(before, after))
	})

	t.Run("list", func(t *testing.T) {
		got := s.txexecRoot(t, "wrap", "--list", "--wrapped-dir", s.wrapped)
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, s.victim+"\t4755 0:0\t"+s.txexec+"\t--state-dir="+s.state+"\twrapped\n", got.Stdout)
	})

	t.Run("wrapped: the attack fails", func(t *testing.T) {
		statuses, out, exploited := s.attack(t)
		t.Logf("wrapped rounds: %v, the secret written %d times", statuses, exploited)
		assert.Zero(t, exploited, out)
		assert.Equal(t, []string{"75", "75", "75", "75", "75", "75"}, statuses, out)
		conflict := "aborted: conflict on " + filepath.Join(s.user, "f") + " (changed on the host while the transaction read it)"
		assert.Equal(t, 6, strings.Count(out, conflict), out)
		assert.Equal(t, 6, strings.Count(out, "victim: open: Stale file handle"), out)
	})

	t.Run("wrapped: without an attack it works as natively", func(t *testing.T) {
		own := filepath.Join(s.user, "own")
		require.NoError(t, os.WriteFile(own, []byte("mine\n"), 0o644))
		require.NoError(t, os.Chown(own, 1000, 1000))
		got := s.asUser(t, nil, s.victim, "append", own, "appended")
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, "checked\n", got.Stdout)
		assert.Empty(t, got.Stderr)
		b, err := os.ReadFile(own)
		require.NoError(t, err)
		assert.Equal(t, "mine\nappended\n", string(b))

		got = s.asUser(t, nil, s.victim, "ids")
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, nativeIDs, got.Stdout, "id -u, id -ru")
	})

	t.Run("wrapped: LD_PRELOAD and a hostile PATH are ignored", func(t *testing.T) {
		preload := filepath.Join(s.root, "preload.so")
		src := filepath.Join(s.root, "preload.c")
		require.NoError(t, os.WriteFile(src, []byte(
			"#include <unistd.h>\n__attribute__((constructor)) static void hostile(void) { write(2, \"PRELOADED\\n\", 10); }\n"), 0o644))
		b, err := exec.Command("gcc", "-shared", "-fPIC", "-o", preload, src).CombinedOutput()
		require.NoError(t, err, "%s", b)
		require.NoError(t, os.Chmod(preload, 0o755))
		hostile := filepath.Join(s.root, "hostile")
		require.NoError(t, os.Mkdir(hostile, 0o755))
		for _, name := range []string{"txexec", "id", "sh", "setpriv", "bash"} {
			require.NoError(t, os.WriteFile(filepath.Join(hostile, name), []byte("#!/bin/sh\necho HOSTILE "+name+" >&2\nexit 99\n"), 0o755))
		}
		// The library does load where nothing removes it. (Set by env, so
		// that setpriv, which runs as root, is not run with it.)
		got := s.asUser(t, nil, "/usr/bin/env", "LD_PRELOAD="+preload, "/bin/true")
		require.Equal(t, "PRELOADED\n", got.Stderr)

		got = s.asUser(t, nil, "/usr/bin/env", "LD_PRELOAD="+preload, "LD_LIBRARY_PATH="+hostile,
			"PATH="+hostile+":/usr/bin:/bin", s.victim, "ids")
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, nativeIDs, got.Stdout)
		assert.Empty(t, got.Stderr, "neither preloaded nor a hostile program run")
	})

	t.Run("the launcher refuses what others than root can write", func(t *testing.T) {
		for _, tc := range []struct {
			name, path string
			mode       uint32
			want       string
		}{
			{"configuration", filepath.Join(entry, "wrap.conf"), 0o664, "configuration " + filepath.Join(entry, "wrap.conf") + ": writable by others than root"},
			{"txexec binary", s.txexec, 0o757, "txexec binary " + s.txexec + ": writable by others than root"},
			{"original", moved, 0o775, "original " + moved + ": writable by others than root"},
			{"wrapped directory", entry, 0o775, "configuration " + filepath.Join(entry, "wrap.conf") + ": a directory above it is writable by others than root"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, unix.Stat(tc.path, &st))
				require.NoError(t, unix.Chmod(tc.path, tc.mode))
				got := s.asUser(t, nil, s.victim, "ids")
				require.NoError(t, unix.Chmod(tc.path, st.Mode&0o7777))
				assert.Equal(t, 126, got.Status)
				assert.Equal(t, "txexec-launcher: "+tc.want+"\n", got.Stderr)
				assert.Empty(t, got.Stdout, "the program did not run")
			})
		}
		got := s.asUser(t, nil, s.victim, "ids")
		require.Equal(t, 0, got.Status, got.Stderr)
	})

	// A package upgrade replaces the launcher with the new set-ID program
	// as dpkg does: the new file is written beside it, then renamed over it.
	upgraded := buildC(t, s.root, "wrap_victim", "victim-upgraded", "-O0", "-DUPGRADED")
	upgradedBytes, err := os.ReadFile(upgraded)
	require.NoError(t, err)
	require.False(t, bytes.Equal(original, upgradedBytes))
	t.Run("check: a replaced program is wrapped again", func(t *testing.T) {
		require.NoError(t, unix.Chmod(upgraded, 0o4755))
		require.NoError(t, os.Rename(upgraded, s.victim))
		got := s.txexecRoot(t, "wrap", "--list", "--wrapped-dir", s.wrapped)
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Contains(t, got.Stdout, "\treplaced (run txexec wrap --check)\n")

		got = s.txexecRoot(t, "wrap", "--check", "--wrapped-dir", s.wrapped)
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, s.victim+": replaced by a new privileged program (a package upgrade?); wrapped again\n", got.Stdout)
		b, err := os.ReadFile(moved)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(upgradedBytes, b), "the new program moved aside")
		statuses, out, exploited := s.attack(t)
		assert.Zero(t, exploited, out)
		assert.Equal(t, []string{"75", "75", "75", "75", "75", "75"}, statuses, out)

		got = s.txexecRoot(t, "wrap", "--check", "--wrapped-dir", s.wrapped)
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Empty(t, got.Stdout, "nothing left to do")
	})

	t.Run("check: an older launcher is updated", func(t *testing.T) {
		current, err := os.ReadFile(s.victim)
		require.NoError(t, err)
		// An older build: other bytes after the ELF image, which still runs.
		require.NoError(t, os.WriteFile(s.victim, append(bytes.Clone(current), "an older launcher"...), 0o4755))
		require.NoError(t, unix.Chmod(s.victim, 0o4755))
		got := s.txexecRoot(t, "wrap", "--check", "--wrapped-dir", s.wrapped)
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, s.victim+": its launcher updated to "+s.txexec+"'s\n", got.Stdout)
		b, err := os.ReadFile(s.victim)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(current, b))
		require.NoError(t, unix.Stat(s.victim, &st))
		assert.Equal(t, uint32(0o4755), st.Mode&0o7777)
	})

	t.Run("unwrap", func(t *testing.T) {
		got := s.txexecRoot(t, "unwrap", s.victim)
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Equal(t, "unwrapped "+s.victim+" (mode 4755, owner 0:0)\n", got.Stdout)
		b, err := os.ReadFile(s.victim)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(upgradedBytes, b), "the same bytes")
		require.NoError(t, unix.Stat(s.victim, &st))
		assert.Equal(t, uint32(0o4755), st.Mode&0o7777)
		assert.Equal(t, [2]uint32{0, 0}, [2]uint32{st.Uid, st.Gid})
		assert.NoDirExists(t, entry)
		got = s.txexecRoot(t, "wrap", "--list", "--wrapped-dir", s.wrapped)
		require.Equal(t, 0, got.Status, got.Stderr)
		assert.Empty(t, got.Stdout)
		got = s.txexecRoot(t, "unwrap", s.victim)
		assert.Equal(t, 1, got.Status)
		assert.Contains(t, got.Stderr, "txexec: unwrap "+s.victim+": not wrapped")
	})
}

// TestWrapCredentials: a wrapped program gets what the kernel gives the
// caller of a set-ID program natively: real ids the caller's, effective
// and saved ids the file's owner (set-user-ID, root or not) or group
// (set-group-ID), the caller's groups, AT_SECURE, non-dumpable, and the
// capabilities of its effective uid.
func TestWrapCredentials(t *testing.T) {
	s := newWrapScene(t)
	creds := buildC(t, s.root, "wrap_creds", "creds")
	caller := []string{"setpriv", "--reuid", "1000", "--regid", "1000", "--groups", "27,100"}
	// Under no_new_privs the kernel ignores set-ID bits, the launcher's as
	// the original's: the launcher runs the original as the kernel would.
	nnpCaller := append(append([]string{}, caller...), "--no-new-privs")
	for _, tc := range []struct {
		name     string
		mode     uint32
		uid, gid int
	}{
		{"set-user-ID root", 0o4755, 0, 0},
		{"set-user-ID of another user", 0o4755, 4243, 4243},
		{"set-group-ID", 0o2755, 0, 4242},
		{"set-user-ID and set-group-ID", 0o6750, 0, 27},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := filepath.Join(s.root, strings.ReplaceAll(tc.name, " ", "-"))
			require.NoError(t, exec.Command("cp", creds, prog).Run())
			require.NoError(t, os.Chown(prog, tc.uid, tc.gid))
			require.NoError(t, unix.Chmod(prog, tc.mode))
			natively := run(t, native, command{Argv: append(append([]string{}, caller...), prog)})
			require.Equal(t, 0, natively.Status, natively.Stderr)
			t.Logf("native: %s", natively.Stdout)
			nativelyNNP := run(t, native, command{Argv: append(append([]string{}, nnpCaller...), prog)})
			require.Equal(t, 0, nativelyNNP.Status, nativelyNNP.Stderr)
			require.Contains(t, nativelyNNP.Stdout, "uid=1000,1000,1000 gid=1000,1000,1000 ")

			got := s.wrap(t, prog)
			require.Equal(t, 0, got.Status, got.Stderr)
			var st unix.Stat_t
			require.NoError(t, unix.Stat(prog, &st))
			assert.Equal(t, tc.mode&0o777|0o4000, st.Mode&0o7777, "the launcher: set-user-ID, never set-group-ID")
			assert.Equal(t, [2]uint32{0, uint32(tc.gid)}, [2]uint32{st.Uid, st.Gid})

			wrapped := run(t, native, command{Argv: append(append([]string{}, caller...), prog)})
			require.Equal(t, 0, wrapped.Status, wrapped.Stderr)
			assert.Equal(t, natively.Stdout, wrapped.Stdout)
			assert.Empty(t, wrapped.Stderr)
			log := s.txexecRoot(t, "log", "--state-dir", s.state)
			require.Equal(t, 0, log.Status, log.Stderr)
			newest, _, _ := strings.Cut(log.Stdout, "\n")
			assert.Regexp(t, `^\d+ +applied .* status 0 +`+regexp.QuoteMeta(prog)+`$`, newest, "it ran in a transaction")

			wrappedNNP := run(t, native, command{Argv: append(append([]string{}, nnpCaller...), prog)})
			require.Equal(t, 0, wrappedNNP.Status, wrappedNNP.Stderr)
			assert.Equal(t, nativelyNNP.Stdout, wrappedNNP.Stdout, "under no_new_privs")

			got = s.txexecRoot(t, "unwrap", prog)
			require.Equal(t, 0, got.Status, got.Stderr)
			require.NoError(t, unix.Stat(prog, &st))
			assert.Equal(t, tc.mode, st.Mode&0o7777)
			assert.Equal(t, [2]uint32{uint32(tc.uid), uint32(tc.gid)}, [2]uint32{st.Uid, st.Gid})
		})
	}
}

// TestWrapFileCapabilities: a program with file capabilities (setcap) is
// wrapped with them, where only root can reach its copy, and run by uid
// 1000 gets what the kernel gives it natively: its ids, the capability
// sets the file grants (all of them effective for +ep, none for a
// capability-aware +p), AT_SECURE. unwrap puts back the same bytes, mode,
// owner and security.capability attribute.
func TestWrapFileCapabilities(t *testing.T) {
	s := newWrapScene(t)
	requireTools(t, "setcap", "getcap")
	creds := buildC(t, s.root, "wrap_creds", "creds")
	// setpriv keeps root's permitted capabilities up to its exec, whose
	// checks they would pass and whose dumpability they would decide: the
	// program is executed by a shell that has none.
	setpriv := []string{"setpriv", "--reuid", "1000", "--regid", "1000", "--groups", "27,100", "/bin/sh", "-c", `exec "$0"`}
	caller := func(prog string) []string { return append(append([]string{}, setpriv...), prog) }
	for _, tc := range []struct {
		name, caps string
		mode       uint32
		gid        int
		wantEff    string
	}{
		{"effective", "cap_net_raw,cap_net_bind_service+ep", 0o755, 0, "CapEff:\t0000000000002400\n"},
		{"permitted only", "cap_net_raw+p", 0o750, 27, "CapEff:\t0000000000000000\n"},
		{"with set-user-ID", "cap_net_raw+ep", 0o4755, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := filepath.Join(s.root, "caps-"+strings.ReplaceAll(tc.name, " ", "-"))
			require.NoError(t, exec.Command("cp", creds, prog).Run())
			require.NoError(t, os.Chown(prog, 0, tc.gid))
			require.NoError(t, unix.Chmod(prog, tc.mode))
			b, err := exec.Command("setcap", tc.caps, prog).CombinedOutput()
			require.NoError(t, err, "%s", b)
			xattr := make([]byte, 64)
			n, err := unix.Lgetxattr(prog, "security.capability", xattr)
			require.NoError(t, err)
			xattr = xattr[:n]
			image, err := os.ReadFile(prog)
			require.NoError(t, err)

			natively := run(t, native, command{Argv: caller(prog)})
			require.Equal(t, 0, natively.Status, natively.Stderr)
			t.Logf("native: %s", natively.Stdout)
			require.Contains(t, natively.Stdout, " secure=1 ")
			if tc.mode&0o4000 == 0 {
				require.Contains(t, natively.Stdout, "uid=1000,1000,1000 gid=1000,1000,1000 ")
				require.Contains(t, natively.Stdout, tc.wantEff)
			}

			got := s.wrap(t, prog)
			require.Equal(t, 0, got.Status, got.Stderr)
			_, moved, ok := strings.Cut(strings.TrimSuffix(got.Stdout, ")\n"), "(original in ")
			require.True(t, ok, got.Stdout)
			entry := filepath.Dir(moved)
			require.Equal(t, s.wrapped, filepath.Dir(entry))
			var st unix.Stat_t
			require.NoError(t, unix.Stat(entry, &st))
			assert.Equal(t, uint32(0o700), st.Mode&0o7777, "the entry: root's alone")
			_, err = unix.Lgetxattr(prog, "security.capability", make([]byte, 64))
			assert.ErrorIs(t, err, unix.ENODATA, "the launcher has no file capabilities")
			kept := make([]byte, 64)
			n, err = unix.Lgetxattr(moved, "security.capability", kept)
			require.NoError(t, err)
			assert.Equal(t, xattr, kept[:n], "the copy keeps them")

			wrapped := run(t, native, command{Argv: caller(prog)})
			require.Equal(t, 0, wrapped.Status, wrapped.Stderr)
			assert.Equal(t, natively.Stdout, wrapped.Stdout)
			assert.Empty(t, wrapped.Stderr)
			log := s.txexecRoot(t, "log", "--state-dir", s.state)
			require.Equal(t, 0, log.Status, log.Stderr)
			newest, _, _ := strings.Cut(log.Stdout, "\n")
			assert.Regexp(t, `^\d+ +applied .* status 0 +`+regexp.QuoteMeta(prog)+`$`, newest, "it ran in a transaction")

			direct := run(t, native, command{Argv: caller(moved)})
			assert.Equal(t, 126, direct.Status, "no one but root reaches the copy: %s", direct.Stdout)

			// Under no_new_privs the kernel ignores the launcher's
			// set-user-ID bit, and the launcher cannot reach the copy.
			nnp := append([]string{"setpriv", "--no-new-privs"}, caller(prog)...)
			wrappedNNP := run(t, native, command{Argv: nnp})
			assert.Equal(t, 126, wrappedNNP.Status, wrappedNNP.Stdout)
			assert.Equal(t, "txexec-launcher: started without euid 0 (no_new_privs, a nosuid mount or a tracer), and this program's capabilities let only root reach it\n", wrappedNNP.Stderr)

			got = s.txexecRoot(t, "unwrap", prog)
			require.Equal(t, 0, got.Status, got.Stderr)
			require.NoError(t, unix.Stat(prog, &st))
			assert.Equal(t, tc.mode, st.Mode&0o7777)
			assert.Equal(t, [2]uint32{0, uint32(tc.gid)}, [2]uint32{st.Uid, st.Gid})
			after, err := os.ReadFile(prog)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(image, after), "the same bytes")
			restored := make([]byte, 64)
			n, err = unix.Lgetxattr(prog, "security.capability", restored)
			require.NoError(t, err)
			assert.Equal(t, xattr, restored[:n], "the same security.capability attribute")
			assert.NoDirExists(t, entry)
			again := run(t, native, command{Argv: caller(prog)})
			require.Equal(t, 0, again.Status, again.Stderr)
			assert.Equal(t, natively.Stdout, again.Stdout)
		})
	}
}

// TestWrapRecordedOptions: the run options given to wrap decide a wrapped
// program's transaction, and the caller's arguments reach the program as
// they are, never txexec.
func TestWrapRecordedOptions(t *testing.T) {
	s := newWrapScene(t)
	got := s.txexecRoot(t, "wrap", "--wrapped-dir="+s.wrapped, "--state-dir="+s.state, "--on-exit=abort", s.victim)
	require.Equal(t, 0, got.Status, got.Stderr)
	own := filepath.Join(s.user, "own")
	require.NoError(t, os.WriteFile(own, []byte("mine\n"), 0o644))
	require.NoError(t, os.Chown(own, 1000, 1000))

	got = s.asUser(t, nil, s.victim, "append", own, "--on-exit=commit")
	assert.Equal(t, 0, got.Status, "the program's own status")
	assert.Equal(t, "checked\n", got.Stdout)
	assert.Regexp(t, `^txexec: transaction \d+ aborted: --on-exit=abort\n$`, got.Stderr)
	b, err := os.ReadFile(own)
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(b), "the append rolled back")
	log := s.txexecRoot(t, "log", "--state-dir", s.state)
	require.Equal(t, 0, log.Status, log.Stderr)
	assert.Contains(t, log.Stdout, s.victim+" append "+own+" --on-exit=commit", "the argument went to the program")

	got = s.txexecRoot(t, "wrap", "--list", "--wrapped-dir", s.wrapped)
	require.Equal(t, 0, got.Status, got.Stderr)
	assert.Equal(t, s.victim+"\t4755 0:0\t"+s.txexec+"\t--state-dir="+s.state+" --on-exit=abort\twrapped\n", got.Stdout)
}

// buildSetIDDeb makes version of package pkg holding one set-user-ID-root
// program, /usr/lib/PKG/prog, a copy of bin.
func buildSetIDDeb(t *testing.T, pkg, version, bin string) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, pkg)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr/lib", pkg), 0o755))
	prog := filepath.Join(root, "usr/lib", pkg, "prog")
	require.NoError(t, exec.Command("cp", bin, prog).Run())
	require.NoError(t, unix.Chmod(prog, 0o4755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "DEBIAN/control"), []byte(
		"Package: "+pkg+"\nVersion: "+version+"\nArchitecture: all\nMaintainer: txexec tests <tests@txexec.invalid>\nDescription: txexec wrap test package\n"), 0o644))
	deb := filepath.Join(dir, pkg+"_"+version+".deb")
	out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", root, deb).CombinedOutput()
	require.NoError(t, err, "dpkg-deb: %s", out)
	return deb
}

// TestWrapDpkgUpgrade: dpkg keeps working on a wrapped program. An upgrade
// replaces the launcher with the package's new set-user-ID program (as it
// replaces any file); txexec wrap --check, as dpkg's post-invoke hook
// (the line scripts/deb.sh installs), wraps it again before dpkg returns; removing the package removes the
// launcher, and the hook drops the wrap. Run it holding
// /tmp/txexec-dpkg-tests.lock (dpkg's lock is machine-wide).
func TestWrapDpkgUpgrade(t *testing.T) {
	s := newWrapScene(t)
	requireTools(t, "dpkg", "dpkg-deb")
	const pkg = "txexec-test-wrap-prog"
	if dpkgInstalled(t, pkg) {
		require.NoError(t, exec.Command("dpkg", "--purge", pkg).Run())
	}
	purgeAtEnd(t, pkg)
	v1 := buildC(t, s.root, "wrap_creds", "creds-v1")
	v2 := buildC(t, s.root, "wrap_creds", "creds-v2", "-O0")
	v2Bytes, err := os.ReadFile(v2)
	require.NoError(t, err)
	prog := filepath.Join("/usr/lib", pkg, "prog")
	// The hook as the Debian package writes it (scripts/deb.sh), in a
	// configuration file dpkg reads from $HOME instead of /etc/dpkg.
	home := t.TempDir()
	hook := "post-invoke=if [ -x " + s.txexec + " ]; then " + s.txexec + " wrap --check --wrapped-dir=" + s.wrapped + "; fi\n"
	require.NoError(t, os.WriteFile(filepath.Join(home, ".dpkg.cfg"), []byte(hook), 0o644))
	dpkg := func(args ...string) result {
		t.Helper()
		got := run(t, native, command{Argv: append([]string{"dpkg"}, args...), Env: []string{"HOME=" + home}})
		require.Equal(t, 0, got.Status, got.Stdout+got.Stderr)
		return got
	}
	asUser := func() result {
		t.Helper()
		got := run(t, native, command{Argv: append(append([]string{}, unprivileged...), prog)})
		require.Equal(t, 0, got.Status, got.Stderr)
		return got
	}

	dpkg("-i", buildSetIDDeb(t, pkg, "1.0", v1))
	before := asUser()
	got := s.wrap(t, prog)
	require.Equal(t, 0, got.Status, got.Stderr)
	assert.Equal(t, before.Stdout, asUser().Stdout)

	got = dpkg("-i", buildSetIDDeb(t, pkg, "2.0", v2))
	assert.Contains(t, got.Stdout, prog+": replaced by a new privileged program (a package upgrade?); wrapped again\n")
	got = s.txexecRoot(t, "wrap", "--list", "--wrapped-dir", s.wrapped)
	require.Equal(t, 0, got.Status, got.Stderr)
	assert.Equal(t, prog+"\t4755 0:0\t"+s.txexec+"\t--state-dir="+s.state+"\twrapped\n", got.Stdout)
	moved := filepath.Join(s.wrapped, "usr-lib-txexec%2Dtest%2Dwrap%2Dprog-prog", "prog")
	b, err := os.ReadFile(moved)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(v2Bytes, b), "version 2 moved aside")
	assert.Equal(t, before.Stdout, asUser().Stdout)
	log := s.txexecRoot(t, "log", "--state-dir", s.state)
	require.Equal(t, 0, log.Status, log.Stderr)
	newest, _, _ := strings.Cut(log.Stdout, "\n")
	assert.Regexp(t, `^\d+ +applied .* status 0 +`+regexp.QuoteMeta(prog)+`$`, newest, "version 2 runs in a transaction")

	// dpkg --verify sees the launcher, not the package's file.
	verify, _ := exec.Command("dpkg", "--verify", pkg).CombinedOutput()
	assert.Contains(t, string(verify), prog)

	got = dpkg("-r", pkg)
	assert.Contains(t, got.Stdout, prog+": gone; its wrap is dropped\n")
	assert.NoFileExists(t, prog)
	assert.NoDirExists(t, filepath.Dir(moved))
}
