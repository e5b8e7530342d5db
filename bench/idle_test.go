package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockedFor is how long BenchmarkBlockedHandler keeps a handler blocked.
const blockedFor = 2 * time.Second

// BenchmarkBlockedHandler measures what the supervisor spends while one of
// its handlers is blocked: `txexec --passthrough -- cat FIFO` waits in the
// supervisor's open of a FIFO until the benchmark writes to it, blockedFor
// later. The metric is txexec's CPU time (user + system, its own and its
// tree's) as a percentage of the wall time; b.N is ignored (one run).
func BenchmarkBlockedHandler(b *testing.B) {
	dir := TempDir(b, "txexec-bench-fifo-")
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		b.Fatal(err)
	}
	cmd, _ := StateCommand(b, txexecBinary(b), "--passthrough", "--", "cat", fifo)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(blockedFor)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	w.WriteString("x\n")
	w.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
}
