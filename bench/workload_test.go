package bench

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math"
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
	"golang.org/x/sys/unix"
)

// BenchmarkWorkload runs whole programs the way a user would, each phase
// natively and under txexec, in the same run, in the modes of
// workloadModes:
//
//	true       true(1): txexec's fixed cost per command
//	dpkg       dpkg -i of Debian's hello (apt-get download; without a
//	           network a package built with dpkg-deb), then dpkg -r
//	build      make -j2 from clean of buildFiles generated C files
//	lfs-small  smallN files of smallSize bytes: create, read, delete
//	lfs-large  a largeMiB MiB file: sequential write, sequential read,
//	           random write, random read (4 KiB calls)
//	rab        mkdir -p of rabDirs×rabSubdirs directories, cp -r of a
//	           tree of rabDirs×rabFiles small files, du -s, grep -r
//
// Each phase is one command and, under txexec, one transaction, timed from
// start to exit (txexec's start-up and commit included), with its own
// supervisor's peak RSS and staging disk use read from TXEXEC_STATS. Work
// and state directories are on a disk file system (workloadDir). Modes
// alternate phase by phase, each in its own work directory, so that a
// ratio compares runs taken seconds apart; dpkg changes the system's
// package database, so there each mode runs both of its phases before the
// next mode starts. The order of the modes rotates (workloadOrder). Before
// each benchmark a native run warms the caches (untimed), and before each
// timed run sync(2) flushes what earlier runs left dirty (untimed), so
// that no run pays for another's write-back.
//
// Metrics, for phase P and mode M, averaged over b.N (`make bench` runs
// -benchtime 1x, once per round):
//
//	P/M-s            seconds
//	P/M-cpu-s        CPU seconds of the command's process tree, and of
//	                 txexec under txexec (user + system, from wait4)
//	P/M-rss-MiB      txexec's own peak RSS (txexec modes)
//	P/M-staging-MiB  the transaction's staging disk use before commit
//	                 (transactional modes)
//	P/M-cs           context switches of the whole tree, txexec's threads
//	                 included (perf events where the kernel lets us; else
//	                 rusage's, and no migrations: see SwitchCounter)
//	P/M-migrations   CPU migrations of the tree, likewise
//	P/M-calls, -execs, -forks, -commit-s, -staged
//	                 from TXEXEC_STATS (txexec modes): trapped calls, execs,
//	                 new processes and threads, the commit's seconds and the
//	                 staged files
//	P/M-fdreplies, -handle-s, -reply-s, -supcpu-s
//	                 likewise: replies that installed a descriptor, the
//	                 workers' seconds in handlers and in replies, txexec's
//	                 own CPU seconds while the tree ran
//	ns/op            the durable phases together
//
// and for dpkg one of apt-hello or built-deb (1), saying which package was
// installed. bench/report turns them into docs/performance.md's workload
// tables.
func BenchmarkWorkload(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("bench: txexec needs root (seccomp supervisor, state directory); not root")
	}
	if st, err := os.Stat(workloadDir); err != nil || !st.IsDir() {
		b.Skipf("bench: %s is not a directory: %v", workloadDir, err)
	}
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) { runWorkload(b, w) })
	}
}

// workloadDir holds the workloads' work and state directories: a disk file
// system, as the programs measured here would use.
const workloadDir = "/var/tmp"

// The workloads' sizes.
const (
	buildFiles = 60    // C files compiled by the build workload
	smallN     = 10000 // LFS small: files
	smallSize  = 1024  // LFS small: bytes per file
	largeMiB   = 100   // LFS large: file size
	rabDirs    = 40    // RAB: directories of the source tree
	rabFiles   = 50    // RAB: files per directory of the source tree
	rabSubdirs = 50    // RAB: directories made under each of rabDirs by the mkdir phase
)

// workloadMode is one way of running a phase's command.
type workloadMode struct {
	name string
	// txexec says the command runs under txexec, with opts before "--".
	txexec bool
	opts   []string
	// syncfs adds a syncfs(2) of the work directory's file system to the
	// timed run, so that durable runs can be compared with native runs
	// whose data is on disk too.
	syncfs bool
}

var workloadModes = []workloadMode{
	{name: "native"},
	{name: "native+sync", syncfs: true},
	// Every trapped call served by the supervisor (--no-fast-lookups) in
	// passthrough, aci and durable; the fast path for read-only lookups
	// (docs/fastpath.md), the default, in passthrough+fast and
	// durable+fast: what it saves in whole programs.
	{name: "passthrough", txexec: true, opts: []string{"--passthrough", "--no-fast-lookups"}},
	{name: "passthrough+fast", txexec: true, opts: []string{"--passthrough", "--fast-lookups"}},
	{name: "aci", txexec: true, opts: []string{"--no-durable", "--no-fast-lookups"}},
	{name: "durable", txexec: true, opts: []string{"--no-fast-lookups"}},
	// txexec's default: durable, with the fast path.
	{name: "durable+fast", txexec: true, opts: []string{"--fast-lookups"}},
}

// transactional says whether m's runs stage anything.
func (m workloadMode) transactional() bool {
	return m.txexec && !slices.Contains(m.opts, "--passthrough")
}

// workload is one benchmark of BenchmarkWorkload.
type workload struct {
	name string
	// global says the workload changes system-wide state: modes then run
	// one after the other instead of phase by phase.
	global bool
	// setup prepares what every mode shares (compiled helpers, the
	// package) once per benchmark and returns the plan.
	setup func(b *testing.B) workloadPlan
}

// workloadPlan is what a workload runs.
type workloadPlan struct {
	// what says what the workload does, for docs/performance.md.
	what string
	// fixture, if set, fills a mode's fresh work directory (untimed).
	fixture func(b *testing.B, dir string)
	phases  []workloadPhase
	// metric, if set, is reported with value 1 (which variant ran).
	metric string
	// jobs is how many processes the workload runs at once (make -jN),
	// when more than one: with two, bench/report also compares its trapped
	// calls with the floor of a tree of two callers at one listener
	// (BenchmarkTwoCallers, which measures two only).
	jobs int
}

// workloadPhase is one command of a workload, run in the work directory.
type workloadPhase struct {
	name string
	argv []string
	// check, if set, verifies after each run (untimed) that the phase
	// did its work — in a transaction, that it committed.
	check func(b *testing.B, dir string)
	// transient, if set, matches the stderr of a failure worth retrying
	// (see isTransient; the failed run's time is not counted).
	transient *regexp.Regexp
}

var workloads = []workload{
	{name: "true", setup: trueWorkload},
	{name: "dpkg", global: true, setup: dpkgWorkload},
	{name: "build", setup: buildWorkload},
	{name: "rab", setup: rabWorkload},
	{name: "lfs-large", setup: lfsLargeWorkload},
	// Last: its deletions slow down file creation for a minute after.
	{name: "lfs-small", setup: lfsSmallWorkload},
}

// modeRun is one mode's directories for one iteration.
type modeRun struct {
	mode       workloadMode
	dir, state string
}

// workloadStats accumulates a benchmark's metrics over its iterations.
type workloadStats struct {
	sum, max map[string]float64
}

func runWorkload(b *testing.B, w workload) {
	plan := w.setup(b)
	bin := txexecBinary(b)
	// Two lines in the "key: value" form of go test's own header lines
	// (goos: linux), which bench/report reads: what the workload does, and
	// its phases in order (the metrics are printed sorted by name).
	phases := make([]string, len(plan.phases))
	for i, ph := range plan.phases {
		phases[i] = ph.name
	}
	fmt.Printf("workload-%s: %s\nphases-%s: %s\n", w.name, plan.what, w.name, strings.Join(phases, " "))
	if plan.jobs > 1 {
		fmt.Printf("jobs-%s: %d\n", w.name, plan.jobs)
	}
	fmt.Println(Switches().Describe())
	// Warm the caches (programs, libraries, headers, package database)
	// with one untimed native run of every phase.
	warm := tempDirIn(b, workloadDir, "txexec-bench-"+w.name+"-")
	if plan.fixture != nil {
		plan.fixture(b, warm)
	}
	for _, ph := range plan.phases {
		runPhase(b, bin, modeRun{mode: workloadModes[0], dir: warm}, ph)
	}

	st := workloadStats{sum: map[string]float64{}, max: map[string]float64{}}
	round := benchRound()
	for i := 0; i < b.N; i++ {
		// Every directory stays until the benchmark ends (tempDirIn):
		// see workloadOrder for why nothing is deleted in between.
		runs := make([]modeRun, len(workloadModes))
		for j, m := range workloadModes {
			runs[j] = modeRun{mode: m, dir: tempDirIn(b, workloadDir, "txexec-bench-"+w.name+"-")}
			if plan.fixture != nil {
				plan.fixture(b, runs[j].dir)
			}
			if m.txexec {
				runs[j].state = newStateDir(b, bin)
			}
		}
		measure := func(r modeRun, ph workloadPhase) {
			t, stats := runPhase(b, bin, r, ph)
			key := ph.name + "/" + r.mode.name
			st.sum[key+"-s"] += t.wall
			st.sum[key+"-cpu-s"] += t.cpu
			st.sum[key+"-cs"] += t.switches.Switches
			if !math.IsNaN(t.switches.Migrations) {
				st.sum[key+"-migrations"] += t.switches.Migrations
			}
			if r.mode.txexec {
				st.max[key+"-rss-MiB"] = max(st.max[key+"-rss-MiB"], float64(stats["vmhwm_bytes"])/(1<<20))
				st.sum[key+"-calls"] += float64(stats["trapped_calls"])
				st.sum[key+"-execs"] += float64(stats["execs"])
				st.sum[key+"-forks"] += float64(stats["forks"] + stats["threads"])
				st.sum[key+"-commit-s"] += float64(stats["commit_ns"]) / 1e9
				st.sum[key+"-fdreplies"] += float64(stats["descriptor_replies"])
				st.sum[key+"-handle-s"] += float64(stats["handle_ns"]) / 1e9
				st.sum[key+"-reply-s"] += float64(stats["reply_ns"]) / 1e9
				st.sum[key+"-supcpu-s"] += float64(stats["supervisor_cpu_ns"]) / 1e9
				st.sum[key+"-staged"] += float64(stats["staging_files"])
			}
			if r.mode.transactional() {
				st.max[key+"-staging-MiB"] = max(st.max[key+"-staging-MiB"], float64(stats["staging_bytes"])/(1<<20))
			}
		}
		if w.global {
			for _, r := range workloadOrder(runs, round+i) {
				for _, ph := range plan.phases {
					measure(r, ph)
				}
			}
		} else {
			for p, ph := range plan.phases {
				for _, r := range workloadOrder(runs, round+i+p) {
					measure(r, ph)
				}
			}
		}
	}
	durable := 0.0
	for k, v := range st.sum {
		b.ReportMetric(v/float64(b.N), k)
		if strings.HasSuffix(k, "/durable-s") {
			durable += v / float64(b.N)
		}
	}
	for k, v := range st.max {
		b.ReportMetric(v, k)
	}
	b.ReportMetric(durable*1e9, "ns/op")
	if plan.metric != "" {
		b.ReportMetric(1, plan.metric)
	}
}

// RoundEnv names the round of `make bench` a run belongs to (1, 2, …).
const RoundEnv = "TXEXEC_BENCH_ROUND"

// benchRound is $TXEXEC_BENCH_ROUND, or 0.
func benchRound() int {
	n, _ := strconv.Atoi(os.Getenv(RoundEnv))
	return max(n, 0)
}

// workloadOrder returns runs rotated by k. Whichever mode runs first
// after a change of workload runs on a colder cache, and on this
// machine's file system (ext4 without a journal) file creation costs more
// the more inodes were deleted in the last minute — by an earlier run or
// by anyone else: the kernel's allocator skips recently deleted inodes
// one by one. Rotating the order by phase, iteration and round (make bench
// sets RoundEnv) gives each mode each position once over len(runs) rounds,
// so such costs fall on every mode alike in the medians.
func workloadOrder(runs []modeRun, k int) []modeRun {
	k %= len(runs)
	return append(append([]modeRun(nil), runs[k:]...), runs[:k]...)
}

// newStateDir makes a fresh state directory under workloadDir (the file
// system of the work directories, so that commit is a rename) and creates
// its store with `txexec log`, so that no timed run pays for that.
func newStateDir(b *testing.B, bin string) string {
	b.Helper()
	state := tempDirIn(b, workloadDir, "txexec-bench-state-")
	if out, err := exec.Command(bin, "--state-dir", state, "log").CombinedOutput(); err != nil {
		b.Fatalf("bench: txexec --state-dir %s log: %v\n%s", state, err, out)
	}
	return state
}

// transientTries is how many times a phase is run when it fails with
// what its transient pattern matches.
const transientTries = 5

// phaseTime is how long a run took, in seconds: wall time, and the CPU
// time (user + system) of the command's process tree — txexec's
// included under txexec — which other load on the machine disturbs less;
// and the context switches and CPU migrations of the tree (Switches).
type phaseTime struct {
	wall, cpu float64
	switches  SwitchCounts
}

// runPhase runs one phase in one mode after a sync(2), and returns its
// times and, under txexec, the TXEXEC_STATS values.
func runPhase(b *testing.B, bin string, r modeRun, ph workloadPhase) (phaseTime, map[string]int64) {
	b.Helper()
	argv := ph.argv
	env := workloadEnv()
	var statsFile string
	if r.mode.txexec {
		argv = append(append(append([]string{bin, "--state-dir", r.state}, r.mode.opts...), "--"), argv...)
		statsFile = filepath.Join(r.state, "bench-stats")
		env = append(env, "TXEXEC_STATS="+statsFile)
	}
	for try := 1; ; try++ {
		syscall.Sync()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = r.dir
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		switches, err := Switches().Run(cmd)
		if err == nil && r.mode.syncfs {
			err = syncfs(r.dir)
		}
		t := phaseTime{wall: time.Since(start).Seconds(), switches: switches}
		if cmd.ProcessState != nil {
			t.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		}
		if err != nil {
			if isTransient(r.mode, ph, err, stderr.Bytes()) && try < transientTries {
				b.Logf("bench: %s (%s): %v, retrying: %s", ph.name, r.mode.name, err, stderr.String())
				time.Sleep(2 * time.Second)
				continue
			}
			b.Fatalf("bench: %s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
		}
		if ph.check != nil {
			ph.check(b, r.dir)
		}
		if statsFile == "" {
			return t, nil
		}
		stats, err := readStats(statsFile)
		if err != nil {
			b.Fatalf("bench: %s: %v", strings.Join(argv, " "), err)
		}
		return t, stats
	}
}

// isTransient says whether a failed run is worth repeating: its stderr
// matches the phase's transient pattern, or txexec could not commit for a
// conflict (exit status 75) — with a change another process made on this
// shared machine to a file the workload read (dpkg's man-db trigger reads
// /var/cache/man/index.db, which every dpkg run changes).
func isTransient(m workloadMode, ph workloadPhase, err error, stderr []byte) bool {
	if ph.transient != nil && ph.transient.Match(stderr) {
		return true
	}
	var ee *exec.ExitError
	return m.txexec && errors.As(err, &ee) && ee.ExitCode() == exitConflict && bytes.Contains(stderr, []byte("conflict on "))
}

// exitConflict is txexec's exit status when the command succeeded but its
// transaction could not commit (README.md, "Using it").
const exitConflict = 75

// workloadEnv is the environment of the workloads' commands: this
// process's without make's variables, which `make bench` would otherwise
// pass down to the build workload's make (its job server among them).
func workloadEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "MAKE_TERMOUT", "MAKE_TERMERR":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func syncfs(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}

// readStats parses the key=value lines txexec writes to TXEXEC_STATS
// (cmd/txexec/benchhooks.go).
func readStats(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read TXEXEC_STATS file: %w", err)
	}
	return parseStats(b)
}

func parseStats(b []byte) (map[string]int64, error) {
	stats := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("TXEXEC_STATS: malformed line %q", l)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("TXEXEC_STATS: malformed line %q: %w", l, err)
		}
		stats[k] = n
	}
	for _, k := range []string{"vmhwm_bytes", "staging_bytes"} {
		if _, ok := stats[k]; !ok {
			return nil, fmt.Errorf("TXEXEC_STATS: no %s", k)
		}
	}
	return stats, nil
}

// requireFile fails the benchmark when path (relative to dir) is missing.
func requireFile(b *testing.B, dir, path string) {
	b.Helper()
	if _, err := os.Lstat(filepath.Join(dir, path)); err != nil {
		b.Fatalf("bench: the phase's result is missing (not committed?): %v", err)
	}
}

// requireNoFile fails the benchmark when path (relative to dir) exists.
func requireNoFile(b *testing.B, dir, path string) {
	b.Helper()
	if _, err := os.Lstat(filepath.Join(dir, path)); err == nil {
		b.Fatalf("bench: %s still exists after the phase (not committed?)", path)
	}
}

// compileC compiles one embedded C program with "cc -O2" into a temporary
// directory; without a C compiler the benchmark is skipped.
func compileC(b *testing.B, name string, source []byte) string {
	b.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		b.Skipf("bench: no C compiler (cc) in PATH, cannot build %s.c: %v", name, err)
	}
	dir := b.TempDir()
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		b.Fatalf("bench: %v", err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(cc, "-O2", "-Wall", "-o", bin, src).CombinedOutput(); err != nil {
		b.Fatalf("bench: %s -O2 %s.c: %v\n%s", cc, name, err, out)
	}
	return bin
}

// trueWorkload runs true(1): what starting txexec (and committing an empty
// transaction) costs, which every phase of the other workloads pays once.
func trueWorkload(b *testing.B) workloadPlan {
	bin, err := exec.LookPath("true")
	if err != nil {
		b.Skipf("bench: no true in PATH: %v", err)
	}
	return workloadPlan{
		what:   "`true`: starting txexec and committing an empty transaction, a fixed cost every phase below pays once",
		phases: []workloadPhase{{name: "true", argv: []string{bin}}},
	}
}

//go:embed lfs.c
var lfsSource []byte

// lfsCmd names the LFS workloads' program in their descriptions.
const lfsCmd = "bench/lfs.c"

func lfsSmallWorkload(b *testing.B) workloadPlan {
	lfs := compileC(b, "lfs", lfsSource)
	n, size := strconv.Itoa(smallN), strconv.Itoa(smallSize)
	last := fmt.Sprintf("small/f%05d", smallN-1)
	return workloadPlan{what: fmt.Sprintf("LFS small files: %d files of %d bytes created, read, deleted (%s, one process per phase)", smallN, smallSize, lfsCmd), phases: []workloadPhase{
		{name: "create", argv: []string{lfs, "small-create", "small", n, size}, check: func(b *testing.B, dir string) { requireFile(b, dir, last) }},
		{name: "read", argv: []string{lfs, "small-read", "small", n, size}},
		{name: "delete", argv: []string{lfs, "small-delete", "small", n}, check: func(b *testing.B, dir string) { requireNoFile(b, dir, "small") }},
	}}
}

func lfsLargeWorkload(b *testing.B) workloadPlan {
	lfs := compileC(b, "lfs", lfsSource)
	mib := strconv.Itoa(largeMiB)
	// firstByte checks the file's first byte: 'q' after the sequential
	// write, 'r' after the random one (lfs.c).
	firstByte := func(want byte) func(b *testing.B, dir string) {
		return func(b *testing.B, dir string) {
			f, err := os.Open(filepath.Join(dir, "large"))
			if err != nil {
				b.Fatalf("bench: %v", err)
			}
			defer f.Close()
			got := make([]byte, 1)
			if _, err := f.Read(got); err != nil || got[0] != want {
				b.Fatalf("bench: large begins with %q (%v), want %q: not committed?", got, err, want)
			}
		}
	}
	return workloadPlan{what: fmt.Sprintf("LFS large file: %d MiB written in order, read in order, overwritten at random, read at random, in 4 KiB calls (%s)", largeMiB, lfsCmd), phases: []workloadPhase{
		{name: "seqwrite", argv: []string{lfs, "large-seqwrite", "large", mib}, check: firstByte('q')},
		{name: "seqread", argv: []string{lfs, "large-seqread", "large", mib}},
		{name: "randwrite", argv: []string{lfs, "large-randwrite", "large", mib}, check: firstByte('r')},
		{name: "randread", argv: []string{lfs, "large-randread", "large", mib}},
	}}
}

// buildJobs are the build's make jobs: this machine's CPUs.
const buildJobs = 2

// buildWorkload compiles buildFiles small C files and links them, with
// make -j buildJobs from a clean tree.
func buildWorkload(b *testing.B) workloadPlan {
	if _, err := exec.LookPath("cc"); err != nil {
		b.Skipf("bench: no C compiler (cc) in PATH: %v", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		b.Skipf("bench: no make in PATH: %v", err)
	}
	return workloadPlan{
		what:    fmt.Sprintf("`make -j%d` from clean: %d C modules and a main, each including stdio.h, stdlib.h, string.h, compiled with cc -O2 and linked", buildJobs, buildFiles),
		fixture: writeBuildTree,
		jobs:    buildJobs,
		phases: []workloadPhase{{name: "make", argv: []string{"make", "-j" + strconv.Itoa(buildJobs), "-s"},
			check: func(b *testing.B, dir string) { requireFile(b, dir, "prog") }}},
	}
}

// buildMakefile builds prog from every .c file of its directory.
const buildMakefile = `CFLAGS = -O2 -Wall
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard *.c)))

prog: $(OBJS)
	$(CC) -o $@ $(OBJS)

%.o: %.c common.h
	$(CC) $(CFLAGS) -c -o $@ $<
`

// writeBuildTree writes the build workload's sources: a header, buildFiles
// modules that include the usual system headers (their parsing is most of
// a small file's compile time, as in real projects) and a main that calls
// them all.
func writeBuildTree(b *testing.B, dir string) {
	b.Helper()
	files := map[string]string{
		"Makefile": buildMakefile,
		"common.h": "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <stdint.h>\n\n" +
			"struct item { char name[32]; uint64_t value; };\n",
	}
	var mainSrc strings.Builder
	mainSrc.WriteString("#include \"common.h\"\n\n")
	for i := 0; i < buildFiles; i++ {
		fmt.Fprintf(&mainSrc, "uint64_t module%02d(int);\n", i)
		files[fmt.Sprintf("m%02d.c", i)] = fmt.Sprintf(`#include "common.h"

static int compare(const void *a, const void *b) {
	const struct item *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

uint64_t module%02d(int n) {
	struct item items[64];
	uint64_t h = %d;
	for (int i = 0; i < 64; i++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		items[i].value = h >> 11;
		snprintf(items[i].name, sizeof items[i].name, "m%02d-%%d", i);
	}
	qsort(items, 64, sizeof items[0], compare);
	for (int i = 0; i < n && i < 64; i++)
		h ^= items[i].value + strlen(items[i].name);
	return h;
}
`, i, i+1, i)
	}
	mainSrc.WriteString("\nint main(void) {\n\tuint64_t h = 0;\n")
	for i := 0; i < buildFiles; i++ {
		fmt.Fprintf(&mainSrc, "\th ^= module%02d(%d);\n", i, i%64)
	}
	mainSrc.WriteString("\tprintf(\"%llu\\n\", (unsigned long long)h);\n\treturn 0;\n}\n")
	files["main.c"] = mainSrc.String()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatalf("bench: %v", err)
		}
	}
}

// rabWorkload is in the spirit of the reimplemented Andrew benchmark:
// many directories made, a source tree copied, its disk use summed and
// searched, each by the usual program.
func rabWorkload(b *testing.B) workloadPlan {
	for _, p := range []string{"mkdir", "cp", "du", "grep"} {
		if _, err := exec.LookPath(p); err != nil {
			b.Skipf("bench: no %s in PATH: %v", p, err)
		}
	}
	mkdir := []string{"mkdir", "-p"}
	for i := 0; i < rabDirs; i++ {
		for j := 0; j < rabSubdirs; j++ {
			mkdir = append(mkdir, fmt.Sprintf("tree/d%02d/s%02d", i, j))
		}
	}
	lastDir := fmt.Sprintf("tree/d%02d/s%02d", rabDirs-1, rabSubdirs-1)
	lastFile := fmt.Sprintf("copy/d%02d/f%02d.c", rabDirs-1, rabFiles-1)
	return workloadPlan{
		what: fmt.Sprintf("in the spirit of the Andrew benchmark: `mkdir -p` of %d directories; `cp -r` of a tree of %d directories × %d files of 1–8 KiB; `du -s` and `grep -r` of the copy",
			rabDirs*rabSubdirs, rabDirs, rabFiles),
		fixture: writeRABTree,
		phases: []workloadPhase{
			{name: "mkdir", argv: mkdir, check: func(b *testing.B, dir string) { requireFile(b, dir, lastDir) }},
			{name: "cp", argv: []string{"cp", "-r", "src", "copy"}, check: func(b *testing.B, dir string) { requireFile(b, dir, lastFile) }},
			{name: "du", argv: []string{"du", "-s", "copy"}},
			// grep exits 0 only when it found the word, which every
			// seventh file has.
			{name: "grep", argv: []string{"grep", "-r", "needle", "copy"}},
		},
	}
}

// writeRABTree writes src/dNN/fNN.c: rabDirs×rabFiles text files of 1 to
// 8 KiB.
func writeRABTree(b *testing.B, dir string) {
	b.Helper()
	for i := 0; i < rabDirs; i++ {
		d := filepath.Join(dir, "src", fmt.Sprintf("d%02d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatalf("bench: %v", err)
		}
		for j := 0; j < rabFiles; j++ {
			var s strings.Builder
			k := i*rabFiles + j
			for line := 0; s.Len() < 1024*(1+k%8); line++ {
				fmt.Fprintf(&s, "int function_%d_%d(int x) { return x * %d + %d; }\n", k, line, line, k)
			}
			if k%7 == 0 {
				s.WriteString("/* needle */\n")
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%02d.c", j)), []byte(s.String()), 0o644); err != nil {
				b.Fatalf("bench: %v", err)
			}
		}
	}
}

func TestParseStats(t *testing.T) {
	stats, err := parseStats([]byte("vmhwm_bytes=33554432\nstaging_bytes=4096\nstaging_files=1\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"vmhwm_bytes": 32 << 20, "staging_bytes": 4096, "staging_files": 1}, stats)
	for _, bad := range []string{"", "vmhwm_bytes=1\n", "vmhwm_bytes=x\nstaging_bytes=0\n", "vmhwm_bytes 1\nstaging_bytes=0\n"} {
		_, err := parseStats([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

func TestWorkloadOrder(t *testing.T) {
	runs := []modeRun{{dir: "a"}, {dir: "b"}, {dir: "c"}}
	dirs := func(rs []modeRun) (s string) {
		for _, r := range rs {
			s += r.dir
		}
		return s
	}
	assert.Equal(t, "abc", dirs(workloadOrder(runs, 0)))
	assert.Equal(t, "bca", dirs(workloadOrder(runs, 1)))
	assert.Equal(t, "cab", dirs(workloadOrder(runs, 5)))
	assert.Equal(t, "abc", dirs(runs), "runs itself is left alone")
}
