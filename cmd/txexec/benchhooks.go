package main

import (
	"cmp"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"txexec/fastlookup"
	"txexec/internal/procfs"
	"txexec/interpose"
	"txexec/syscalls"
)

// Two environment variables serve the benchmarks (bench/workload_test.go,
// docs/performance.md), not users; they are read only by a run
// (txexec [options] -- COMMAND), never by a subcommand.
//
// TXEXEC_STATS=FILE writes, when txexec exits, what a benchmark records of
// the run besides its time, as key=value lines:
//
//	vmhwm_bytes=N     the supervisor's own peak RSS (VmHWM of /proc/self/status,
//	                  read at exit, after the commit); not its command tree's,
//	                  which wait4's rusage would add in
//	staging_bytes=N   disk used by the transaction's staging directory
//	                  (st_blocks × 512, each inode once), measured when the
//	                  command tree has ended, just before commit or abort;
//	                  the largest over --retry attempts; 0 with --passthrough
//	staging_files=N   inodes in it, the directory itself excluded
//	trapped_calls=N   system calls the supervisor answered (every seccomp
//	                  notification), over all --retry attempts
//	trapped_calls.NAME=N  the same for one call (its name in the
//	                  syscall table), one line per call answered, most
//	                  answered first
//	execs=N           execs that replaced a process image (PTRACE_EVENT_EXEC),
//	                  the command's own included
//	exec_stops=N      execve and execveat calls the tracer stopped and served,
//	                  failed ones included (the fast path answers some
//	                  failures without a stop: docs/fastpath.md §15)
//	forks=N           new processes: fork, vfork, clone without CLONE_THREAD
//	                  (PTRACE_EVENT_FORK, _VFORK, _CLONE)
//	threads=N         new threads (clone with CLONE_THREAD)
//	fast_records=N    calls the fast-lookup agent made natively whose
//	                  records the supervisor fed into the read set (a
//	                  repeat of a record its process published at the same
//	                  generation is not published: docs/fastpath.md)
//	descriptor_replies=N  trapped calls answered with a descriptor
//	                  (ADDFD: open, creat, dup-like replies), over all
//	                  --retry attempts
//	handle_ns=N       time the supervisor's workers spent in handlers, from
//	                  each notification's receipt to its reply (copy-in,
//	                  the view, host calls, copy-out), summed over calls
//	reply_ns=N        time they spent in the replies; a descriptor's
//	                  includes the wait for the caller to take it, and
//	                  (the caller then woken on the worker's CPU) the
//	                  caller's run there until it next blocks
//	supervisor_cpu_ns=N  txexec's own CPU time (user + system, its threads
//	                  only, not the command tree's) when the command tree
//	                  ended: before the commit
//	commit_ns=N       time of the commit: validation, records, write-through
//	                  and its syncs (0 with --passthrough, or an abort);
//	                  execs to commit_ns are over all --retry attempts too
//
// TXEXEC_CPUPROFILE=FILE writes a CPU profile of the supervisor (Go's
// runtime/pprof) from before the command starts until txexec exits.
// trappedCalls counts the calls answered by every supervised run of this
// txexec (supervise adds each session's count), for TXEXEC_STATS.
var trappedCalls atomic.Uint64

// trappedByNr is trappedCalls by system call number.
var trappedByNr = struct {
	sync.Mutex
	m map[int]uint64
}{m: map[int]uint64{}}

// addTrapped adds a session's answered calls to trappedCalls and
// trappedByNr.
func addTrapped(total uint64, byNr map[int]uint64) {
	trappedCalls.Add(total)
	trappedByNr.Lock()
	defer trappedByNr.Unlock()
	for nr, n := range byNr {
		trappedByNr.m[nr] += n
	}
}

// trappedByCall renders trappedByNr for TXEXEC_STATS, most answered first:
// a trapped_calls.NAME=N line for each call.
func trappedByCall() string {
	trappedByNr.Lock()
	defer trappedByNr.Unlock()
	nrs := slices.Collect(maps.Keys(trappedByNr.m))
	slices.SortFunc(nrs, func(a, b int) int {
		if c := cmp.Compare(trappedByNr.m[b], trappedByNr.m[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	parts := make([]string, len(nrs))
	for i, nr := range nrs {
		parts[i] = fmt.Sprintf("trapped_calls.%s=%d\n", strings.ReplaceAll(syscalls.NameOf(nr), " ", "_"), trappedByNr.m[nr])
	}
	return strings.Join(parts, "")
}

// treeEvents counts the process-tree events of every supervised run of
// this txexec, for TXEXEC_STATS.
var treeEvents treeCounts

type treeCounts struct{ forks, threads, execs, execStops atomic.Uint64 }

func (c *treeCounts) add(n interpose.Counts) {
	c.forks.Add(n.Forks)
	c.threads.Add(n.Threads)
	c.execs.Add(n.Execs)
	c.execStops.Add(n.ExecStops)
}

// service adds up the workers' times and descriptor replies of every
// supervised run, and supervisorCPU is txexec's CPU time when the last
// run's tree ended, for TXEXEC_STATS.
var service struct {
	handle, reply, fdReplies, supervisorCPU atomic.Int64
}

// addService adds a session's service times and notes txexec's CPU time
// so far (getrusage(RUSAGE_SELF): the supervisor's threads, not the
// command tree, whose processes are not txexec's waited-for children).
func addService(s interpose.Service) {
	service.handle.Add(int64(s.Handle))
	service.reply.Add(int64(s.Reply))
	service.fdReplies.Add(int64(s.DescriptorReplies))
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		service.supervisorCPU.Store(ru.Utime.Nano() + ru.Stime.Nano())
	}
}

const (
	statsEnv      = "TXEXEC_STATS"
	cpuProfileEnv = "TXEXEC_CPUPROFILE"
)

// benchHooks is what the two variables asked for; the zero value (neither
// set) does nothing.
type benchHooks struct {
	statsPath    string
	profile      *os.File
	stagingBytes int64
	stagingFiles int64
	commit       time.Duration
}

// startBenchHooks reads the environment and starts the CPU profile. A
// hook that cannot start is reported and skipped: it must not change the
// outcome of the command it observes.
func startBenchHooks() *benchHooks {
	h := &benchHooks{statsPath: os.Getenv(statsEnv)}
	if p := os.Getenv(cpuProfileEnv); p != "" {
		f, err := os.Create(p)
		if err == nil {
			err = pprof.StartCPUProfile(f)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "txexec: %s: %v\n", cpuProfileEnv, err)
		} else {
			h.profile = f
		}
	}
	return h
}

// measureStaging records the disk use of a transaction's staging
// directory, if TXEXEC_STATS asked for it (walking a large staging area
// costs time the run would not otherwise spend).
func (h *benchHooks) measureStaging(dir string) {
	if h.statsPath == "" {
		return
	}
	used, files, err := diskUsage(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %s: %v\n", statsEnv, err)
		return
	}
	h.stagingBytes = max(h.stagingBytes, used)
	h.stagingFiles = max(h.stagingFiles, files)
}

// timeCommit runs commit and adds its time to commit_ns.
func (h *benchHooks) timeCommit(commit func() error) error {
	start := time.Now()
	err := commit()
	h.commit += time.Since(start)
	return err
}

// finish stops the profile and writes the stats file.
func (h *benchHooks) finish() {
	if h.profile != nil {
		pprof.StopCPUProfile()
		h.profile.Close()
	}
	if h.statsPath == "" {
		return
	}
	hwm, err := vmHWM("/proc/self/status")
	if err == nil {
		s := fmt.Sprintf("vmhwm_bytes=%d\nstaging_bytes=%d\nstaging_files=%d\ntrapped_calls=%d\n"+
			"%sexecs=%d\nexec_stops=%d\nforks=%d\nthreads=%d\nfast_records=%d\n"+
			"descriptor_replies=%d\nhandle_ns=%d\nreply_ns=%d\nsupervisor_cpu_ns=%d\ncommit_ns=%d\n",
			hwm, h.stagingBytes, h.stagingFiles, trappedCalls.Load(), trappedByCall(),
			treeEvents.execs.Load(), treeEvents.execStops.Load(), treeEvents.forks.Load(), treeEvents.threads.Load(), fastlookup.RecordsFed(),
			service.fdReplies.Load(), service.handle.Load(), service.reply.Load(), service.supervisorCPU.Load(),
			h.commit.Nanoseconds())
		err = os.WriteFile(h.statsPath, []byte(s), 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "txexec: %s: %v\n", statsEnv, err)
	}
}

// diskUsage is du's count for dir: st_blocks × 512 of every inode under
// it, hard links counted once, and how many inodes there are besides dir.
// A missing dir uses nothing.
func diskUsage(dir string) (used, files int64, err error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return &os.PathError{Op: "lstat", Path: p, Err: err}
		}
		id := inode{uint64(st.Dev), st.Ino}
		if seen[id] {
			return nil
		}
		seen[id] = true
		used += st.Blocks * 512
		if p != dir {
			files++
		}
		return nil
	})
	return used, files, err
}

// vmHWM reads the VmHWM line ("VmHWM:	  12345 kB") of a
// /proc/PID/status file, in bytes.
func vmHWM(status string) (int64, error) {
	f, err := procfs.Read(status)
	if err != nil {
		return 0, err
	}
	n, err := f.Bytes("VmHWM")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", status, err)
	}
	return n, nil
}
