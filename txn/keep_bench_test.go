package txn

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// BenchmarkCommitKeep times the durable commit of a transaction that
// places 2000 staged files of 1 KiB, from its commit point to its
// write-through marked applied (store.Commit, then writeThrough), with
// before-images kept ("create", "replace") and without ("-base": the
// before/after tables of bench/report). "create" makes new files (a
// record each), "replace" replaces 2000 existing ones (a hard link of each
// into the undo area, a record each). The state directory and the tree
// are under /var/tmp (a disk file system; t.TempDir may be a tmpfs, where
// every sync is free). Staging the files (and a sync(2) before each run)
// is not timed. ns/call is one commit; cpu-ns/call the CPU time (user
// and system, every thread of the process) it took, which other loads
// on a shared machine move much less than its wall time. The target is
// keep ≤ 1.1× base.
func BenchmarkCommitKeep(b *testing.B) {
	const n = 2000
	if st, err := os.Stat("/var/tmp"); err != nil || !st.IsDir() {
		b.Skipf("no /var/tmp: %v", err)
	}
	for _, v := range []struct {
		name          string
		replace, keep bool
	}{
		{"create-base", false, false}, {"create", false, true},
		{"replace-base", true, false}, {"replace", true, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			buf := make([]byte, 1024)
			b.StopTimer()
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				d, err := os.MkdirTemp("/var/tmp", "txexec-bench-keep-")
				if err != nil {
					b.Fatal(err)
				}
				s, err := store.Open(filepath.Join(d, "state"), store.Options{Durable: true})
				if err != nil {
					b.Fatal(err)
				}
				tree := filepath.Join(d, "tree")
				if err := os.Mkdir(tree, 0o755); err != nil {
					b.Fatal(err)
				}
				tx, err := s.Begin(store.TxInfo{Command: []string{"bench"}, KeepUndo: v.keep})
				if err != nil {
					b.Fatal(err)
				}
				area := s.StagingDir(tx.ID)
				ops := make([]store.RedoOp, n)
				for j := range ops {
					src := filepath.Join(area, fmt.Sprint(j))
					dst := filepath.Join(tree, fmt.Sprint(j))
					if err := os.WriteFile(src, buf, 0o644); err != nil {
						b.Fatal(err)
					}
					if v.replace {
						if err := os.WriteFile(dst, buf[:10], 0o644); err != nil {
							b.Fatal(err)
						}
					}
					ops[j] = store.RedoOp{Kind: store.OpRename, Src: src, Path: dst, Ino: inoOf(b, src)}
				}
				if err := SyncStaged(ops, []string{area}); err != nil {
					b.Fatal(err)
				}
				unix.Sync()
				cpu0 := cpuTime(b)
				b.StartTimer()
				if _, err := s.Commit(tx.ID, nil, store.Prepared{Ops: ops}); err != nil {
					b.Fatal(err)
				}
				err = writeThrough(s, tx.ID, ops, true, v.keep, false)
				b.StopTimer()
				cpu += cpuTime(b) - cpu0
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
				os.RemoveAll(d)
				unix.Sync()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/call")
		})
	}
}

// cpuTime is the CPU time the process has taken so far.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
