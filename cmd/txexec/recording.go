package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"txexec/internal/cli"
	"txexec/record"
	"txexec/store"
	"txexec/txn"
)

// storeBlobs are the state directory's blobs, as package record wants
// them.
type storeBlobs struct{ st *store.Store }

func (b storeBlobs) Put(r io.Reader) (string, error)         { return b.st.PutBlob(r) }
func (b storeBlobs) Open(hash string) (io.ReadCloser, error) { return b.st.OpenBlob(hash) }

// stdinForRepeats is what every run of --repeat reads: txexec's own
// stdin, read once; nothing when it is a terminal.
func stdinForRepeats() ([]byte, error) {
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
		return nil, nil
	}
	return io.ReadAll(os.Stdin)
}

// repeatRuns is --repeat N: N deterministic runs of the command, each
// kept, compared with the first and aborted; the first run's output is
// passed on. 0 when every run agrees with the first, 1 when one does not.
func repeatRuns(o *cli.Run) int {
	st, err := openStore(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitInternal
	}
	defer st.Close()
	in, err := stdinForRepeats()
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: read stdin: %v\n", err)
		return exitInternal
	}
	tmp, err := os.MkdirTemp("", "txexec-repeat-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitInternal
	}
	defer os.RemoveAll(tmp)
	m := &txn.Manager{Store: st}
	var first runOutcome
	agree := true
	for i := 0; i < o.Repeat; i++ {
		seed := o.Seed
		if o.VarySeed {
			seed += uint64(i)
		}
		spec := childSpec{args: childArgs(o, seed, st.Dir(), o.Argv), stdin: bytes.NewReader(in)}
		changes := filepath.Join(tmp, fmt.Sprintf("changes-%d", i))
		spec.env = append(os.Environ(), changesEnv+"="+changes)
		if i == 0 {
			spec.liveOut, spec.liveErr = os.Stdout, os.Stderr
		}
		res, err := runChild(spec)
		if err != nil {
			fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
			return exitInternal
		}
		if res.kept == 0 {
			fmt.Fprintf(os.Stderr, "txexec: run %d of %d (seed %d) ended without a transaction to compare (exit status %d):\n%s", i+1, o.Repeat, seed, res.status, res.stderr)
			return exitInternal
		}
		lines, err := readChanges(changes)
		abortErr := m.AbortKept(res.kept, "--repeat compares runs and commits none")
		if err == nil {
			err = abortErr
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
			return exitInternal
		}
		out := runOutcome{status: res.status, stdout: res.stdout, stderr: res.stderr, changes: lines}
		if i == 0 {
			first = out
			continue
		}
		if d := firstDifferences(first, out); len(d) > 0 {
			agree = false
			fmt.Fprintf(os.Stderr, "txexec: run %d of %d (seed %d) differs from run 1 in %s\n", i+1, o.Repeat, seed, strings.Join(d, ", "))
		}
	}
	if !agree {
		return 1
	}
	fmt.Fprintf(os.Stderr, "txexec: the %d runs agree: exit status %d, stdout, stderr and %d changes\n", o.Repeat, first.status, len(first.changes))
	return 0
}

// recordRun is --record: one deterministic run, kept; then what it read
// and produced is recorded, and its transaction ends as --on-exit says.
func recordRun(o *cli.Run) int {
	st, err := openStore(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitInternal
	}
	defer st.Close()
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: find working directory: %v\n", err)
		return exitInternal
	}
	tmp, err := os.MkdirTemp("", "txexec-record-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitInternal
	}
	defer os.RemoveAll(tmp)
	changes := filepath.Join(tmp, "changes")
	res, err := runChild(childSpec{args: childArgs(o, o.Seed, st.Dir(), o.Argv), env: append(os.Environ(), changesEnv+"="+changes),
		stdin: os.Stdin, liveOut: os.Stdout, liveErr: os.Stderr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
		return exitInternal
	}
	if res.kept == 0 {
		fmt.Fprintln(os.Stderr, "txexec: nothing recorded: the run ended without a transaction")
		return res.status
	}
	m := &txn.Manager{Store: st, Durable: o.Durable}
	id := res.kept
	rid, err := saveRecording(st, o, cwd, res, changes)
	if err != nil {
		why := "cannot record the run: " + err.Error()
		if abortErr := m.AbortKept(id, why); abortErr != nil {
			fmt.Fprintf(os.Stderr, "txexec: %v\n", abortErr)
			return exitInternal
		}
		fmt.Fprintf(os.Stderr, "txexec: transaction %d aborted: %s\n", id, why)
		var ce *record.ChangedError
		if errors.As(err, &ce) {
			return exitConflict // the commit would have found it too
		}
		return exitInternal
	}
	fmt.Fprintf(os.Stderr, "txexec: recorded run %d (transaction %d); txexec replay %d runs it again\n", rid, id, rid)
	switch txn.Settle(o.OnExit, res.status, false) {
	case txn.Abort:
		why := "--on-exit=abort"
		if o.OnExit == txn.OnExitSuccess {
			why = fmt.Sprintf("the command exited with status %d", res.status)
		}
		if err := m.AbortKept(id, why); err != nil {
			fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
			return exitInternal
		}
		fmt.Fprintf(os.Stderr, "txexec: transaction %d aborted: %s\n", id, why)
	case txn.Keep:
		fmt.Fprintf(os.Stderr, "txexec: transaction %d kept; finish it with txexec commit %d or txexec abort %d\n", id, id, id)
	default:
		if err := m.CommitKept(id); err != nil {
			var ce *txn.CommitError
			if errors.As(err, &ce) {
				fmt.Fprintf(os.Stderr, "txexec: transaction %d aborted: %v\n", id, ce.Err)
				if ce.Conflict {
					return exitConflict
				}
			} else {
				fmt.Fprintf(os.Stderr, "txexec: %v\n", err)
			}
			return exitInternal
		}
	}
	return res.status
}

// saveRecording records run res of o, made in cwd, whose changes are in
// the file changes, and returns the recording's id.
func saveRecording(st *store.Store, o *cli.Run, cwd string, res childResult, changes string) (int64, error) {
	blobs := storeBlobs{st}
	reads, err := st.Reads(res.kept)
	if err != nil {
		return 0, err
	}
	files, err := record.Capture(reads, blobs)
	if err != nil {
		return 0, err
	}
	lines, err := readChanges(changes)
	if err != nil {
		return 0, err
	}
	stdout, err := blobs.Put(bytes.NewReader(res.stdout))
	if err != nil {
		return 0, err
	}
	stderr, err := blobs.Put(bytes.NewReader(res.stderr))
	if err != nil {
		return 0, err
	}
	man := &record.Manifest{Argv: o.Argv, Env: os.Environ(), Cwd: cwd, Seed: o.Seed, Files: files,
		Outcome: record.Outcome{Status: res.status, Stdout: stdout, Stderr: stderr, Changes: lines}}
	h, err := record.Save(blobs, man)
	if err != nil {
		return 0, err
	}
	return st.AddRecording(res.kept, h)
}

// The environment of a replay's child txexec: the root it enters (in a
// mount namespace of its own) and the working directory there.
const (
	replayRootEnv = "_TXEXEC_REPLAY_ROOT"
	replayCwdEnv  = "_TXEXEC_REPLAY_CWD"
	// replayState is the replay's state directory, inside its root.
	replayState = "/.txexec-replay-state"
	// replayChanges is where the replay's child writes its changes.
	replayChanges = "/.txexec-replay-changes"
)

// enterReplayRootIfAsked makes a child txexec started by replay (in a
// mount namespace of its own) enter the replay's root: the kernel's trees
// bound in, then chroot. Propagation is made private first, so that none
// of this reaches the host's mounts.
func enterReplayRootIfAsked() error {
	root := os.Getenv(replayRootEnv)
	if root == "" {
		return nil
	}
	cwd := os.Getenv(replayCwdEnv)
	var err error
	os.Unsetenv(replayRootEnv)
	os.Unsetenv(replayCwdEnv)
	if err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	for _, b := range record.BoundTrees() {
		if err := unix.Mount(b, filepath.Join(root, b), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", b, err)
		}
	}
	if stubExec, err = carryOwnFiles(root); err != nil {
		return err
	}
	if err := unix.Chroot(root); err != nil {
		return fmt.Errorf("chroot %s: %w", root, err)
	}
	if err := os.Chdir(cwd); err != nil {
		return fmt.Errorf("enter the recorded working directory: %w", err)
	}
	return nil
}

// stubExec is interpose.Config.StubExec: set in a replay's root.
var stubExec []string

// replayOwn is the directory of a replay's root that holds txexec's own
// file, its loader and libraries, which the stubs it starts there need.
const replayOwn = "/.txexec-replay"

// carryOwnFiles copies txexec's file, and the loader and libraries it is
// running with (from /proc/self/maps), into root's replayOwn, and returns
// the command that starts the stub from them once in root.
func carryOwnFiles(root string) ([]string, error) {
	dir := filepath.Join(root, replayOwn)
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		return nil, err
	}
	if err := copyFile("/proc/self/exe", filepath.Join(dir, "txexec"), 0o755); err != nil {
		return nil, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	interp, _ := elfInterpreter("/proc/self/exe")
	loader := ""
	seen := map[string]bool{}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") || !strings.Contains(filepath.Base(f[5]), ".so") || seen[f[5]] {
			continue
		}
		seen[f[5]] = true
		// The loader looks a library up by its soname, which the
		// file mapped (libseccomp.so.2.5.4) may not be named.
		name := filepath.Base(f[5])
		if so, ok := soname(f[5]); ok {
			name = so
		}
		if err := copyFile(f[5], filepath.Join(dir, "lib", name), 0o755); err != nil {
			return nil, err
		}
		if interp != "" && sameFile(f[5], interp) {
			loader = name
		}
	}
	if interp == "" {
		return []string{replayOwn + "/txexec", "txexec"}, nil // static: no loader
	}
	if loader == "" {
		return nil, fmt.Errorf("find txexec's loader %s among its mappings", interp)
	}
	lib := replayOwn + "/lib"
	return []string{lib + "/" + loader, "--library-path", lib, "--argv0", "txexec", replayOwn + "/txexec"}, nil
}

// soname returns the DT_SONAME of shared library path.
func soname(path string) (string, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	names, err := f.DynString(elf.DT_SONAME)
	if err != nil || len(names) == 0 {
		return "", false
	}
	return names[0], true
}

func sameFile(a, b string) bool {
	var sa, sb unix.Stat_t
	return unix.Stat(a, &sa) == nil && unix.Stat(b, &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// elfInterpreter returns the program interpreter of ELF file path.
func elfInterpreter(path string) (string, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return "", false
			}
			return strings.TrimRight(string(b), "\x00"), true
		}
	}
	return "", false
}

// loadRecording returns the manifest and blobs of what replay or export
// names: a recording of the state directory, or an exported file
// (imported into tmp).
func (c *subcommand) loadRecording(st *store.Store, tmp string) (*record.Manifest, record.Blobs, error) {
	if c.file != "" {
		f, err := os.Open(c.file)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		dir := filepath.Join(tmp, "blobs")
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, nil, err
		}
		m, blobs, err := record.Import(f, dir)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c.file, err)
		}
		return m, blobs, nil
	}
	h, err := st.Recording(c.id)
	if err != nil {
		return nil, nil, err
	}
	m, err := record.Load(storeBlobs{st}, h)
	return m, storeBlobs{st}, err
}

// cmdReplay runs a recording again in a root made from what it read,
// deterministically with its seed, and compares the outcome. Nothing of
// it reaches the host.
func cmdReplay(c *subcommand) int {
	var st *store.Store
	if c.file == "" {
		var status int
		if st, status = c.open(); st == nil {
			return status
		}
		defer st.Close()
	}
	tmp, err := os.MkdirTemp("", "txexec-replay-")
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	defer os.RemoveAll(tmp)
	m, blobs, err := c.loadRecording(st, tmp)
	if errors.Is(err, store.ErrNoRecording) {
		fmt.Fprintf(c.errOut, "txexec: no recording %d\n", c.id)
		return exitRefused
	}
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	if c.commit {
		return c.replayOnHost(m, blobs)
	}
	root := filepath.Join(tmp, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	if err := record.Materialize(root, m, blobs); err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	opts := cli.Defaults()
	opts.Durable = false // a scratch transaction, thrown away with its root
	env := append(append([]string(nil), m.Env...), replayRootEnv+"="+root, replayCwdEnv+"="+m.Cwd, changesEnv+"="+replayChanges)
	res, err := runChild(childSpec{args: childArgs(&opts, m.Seed, replayState, m.Argv), env: env, dir: "/",
		sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}})
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	if res.kept == 0 {
		fmt.Fprintf(c.errOut, "txexec: the replay ended without a transaction to compare (exit status %d):\n%s", res.status, res.stderr)
		return exitInternal
	}
	lines, err := readChanges(filepath.Join(root, replayChanges))
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	same, status := c.compareReplay(m, blobs, runOutcome{status: res.status, stdout: res.stdout, stderr: res.stderr, changes: lines})
	if same {
		fmt.Fprintln(c.out)
	}
	return status
}

// compareReplay compares a replay's outcome with m's, says so (without
// the final newline when they agree, which the caller may extend) and
// returns whether they agree and the exit status that says it.
func (c *subcommand) compareReplay(m *record.Manifest, blobs record.Blobs, replayed runOutcome) (bool, int) {
	stdout, err1 := record.ReadBlob(blobs, m.Outcome.Stdout)
	stderr, err2 := record.ReadBlob(blobs, m.Outcome.Stderr)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return false, exitInternal
	}
	recorded := runOutcome{status: m.Outcome.Status, stdout: stdout, stderr: stderr, changes: m.Outcome.Changes}
	name := c.file
	if name == "" {
		name = fmt.Sprintf("recording %d", c.id)
	}
	d := firstDifferences(recorded, replayed)
	if len(d) == 0 {
		fmt.Fprintf(c.out, "replay of %s: identical: exit status %d, stdout, stderr and %d changes", name, recorded.status, len(recorded.changes))
		return true, 0
	}
	fmt.Fprintf(c.out, "replay of %s: differs in %s\n", name, strings.Join(d, ", "))
	if c.diff {
		if recorded.status != replayed.status {
			fmt.Fprintf(c.out, "exit status: recorded %d, replayed %d\n", recorded.status, replayed.status)
		}
		writeOutcomeDiff(c.out, "stdout", splitLines(recorded.stdout), splitLines(replayed.stdout))
		writeOutcomeDiff(c.out, "stderr", splitLines(recorded.stderr), splitLines(replayed.stderr))
		writeOutcomeDiff(c.out, "changes", recorded.changes, replayed.changes)
	}
	return false, 1
}

// replayOnHost is replay --commit: when the host still holds everything
// the recording read, the recorded command runs on the host, as a
// deterministic run with the recorded environment, cwd and seed; its
// transaction commits if the outcome is the recorded one, and is aborted
// otherwise.
func (c *subcommand) replayOnHost(m *record.Manifest, blobs record.Blobs) int {
	if err := record.Matches(m); err != nil {
		fmt.Fprintf(c.errOut, "txexec: replay --commit: the host no longer holds what the run read: %v; nothing was run\n", err)
		return exitConflict
	}
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	tmp, err := os.MkdirTemp("", "txexec-replay-")
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	defer os.RemoveAll(tmp)
	changes := filepath.Join(tmp, "changes")
	opts := cli.Defaults()
	opts.Durable = c.opts.Durable
	env := append(append([]string(nil), m.Env...), changesEnv+"="+changes)
	res, err := runChild(childSpec{args: childArgs(&opts, m.Seed, st.Dir(), m.Argv), env: env, dir: m.Cwd})
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	if res.kept == 0 {
		fmt.Fprintf(c.errOut, "txexec: the replay ended without a transaction to compare (exit status %d):\n%s", res.status, res.stderr)
		return exitInternal
	}
	lines, err := readChanges(changes)
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	mgr := &txn.Manager{Store: st, Durable: c.opts.Durable}
	same, status := c.compareReplay(m, blobs, runOutcome{status: res.status, stdout: res.stdout, stderr: res.stderr, changes: lines})
	if !same {
		if err := mgr.AbortKept(res.kept, "replay --commit: the outcome is not the recorded one"); err != nil {
			fmt.Fprintf(c.errOut, "txexec: %v\n", err)
			return exitInternal
		}
		fmt.Fprintf(c.errOut, "txexec: transaction %d aborted: the outcome is not the recorded one\n", res.kept)
		return status
	}
	if err := mgr.CommitKept(res.kept); err != nil {
		fmt.Fprintln(c.out)
		var ce *txn.CommitError
		if errors.As(err, &ce) {
			fmt.Fprintf(c.errOut, "txexec: transaction %d aborted: %v\n", res.kept, ce.Err)
			if ce.Conflict {
				return exitConflict
			}
			return exitInternal
		}
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	fmt.Fprintf(c.out, "; transaction %d committed\n", res.kept)
	return 0
}

// writeOutcomeDiff writes a unified diff of one part of two outcomes,
// nothing when they agree.
func writeOutcomeDiff(w io.Writer, what string, recorded, replayed []string) {
	if strings.Join(recorded, "\n") == strings.Join(replayed, "\n") {
		return
	}
	fmt.Fprintf(w, "--- recorded %s\n+++ replayed %s\n%s", what, what, unifiedHunks(recorded, replayed, 3))
}

// cmdExport writes a recording to one file, which txexec replay FILE
// runs on another machine of the same architecture.
func cmdExport(c *subcommand) int {
	st, status := c.open()
	if st == nil {
		return status
	}
	defer st.Close()
	h, err := st.Recording(c.id)
	if errors.Is(err, store.ErrNoRecording) {
		fmt.Fprintf(c.errOut, "txexec: no recording %d\n", c.id)
		return exitRefused
	}
	var m *record.Manifest
	if err == nil {
		m, err = record.Load(storeBlobs{st}, h)
	}
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	f, err := os.OpenFile(c.output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	err = record.Export(f, m, storeBlobs{st})
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(c.output)
		fmt.Fprintf(c.errOut, "txexec: %v\n", err)
		return exitInternal
	}
	fmt.Fprintf(c.errOut, "txexec: recording %d exported to %s\n", c.id, c.output)
	return 0
}
