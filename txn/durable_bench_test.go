package txn

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"txexec/store"
)

// BenchmarkSyncStaged times making the staged data of a commit of 2000
// new files of 1 KiB durable, in a staging area under /var/tmp (a disk
// file system; t.TempDir may be a tmpfs, where every sync is free):
// "2000" with SyncStaged (an fsync per staged file, its area and the
// area's directory), "2000-base" with one syncfs(2) of the area's file
// system, as commits did before SyncStaged (the "-base" of bench/report's
// before/after tables). Writing the files (and
// a sync(2) before each run, so that each starts with nothing else
// dirty) is not timed. ns/call is one run.
func BenchmarkSyncStaged(b *testing.B) {
	const n = 2000
	if st, err := os.Stat("/var/tmp"); err != nil || !st.IsDir() {
		b.Skipf("no /var/tmp: %v", err)
	}
	for _, v := range []struct {
		name string
		sync func(ops []store.RedoOp, area string) error
	}{
		{"2000-base", func(_ []store.RedoOp, area string) error {
			fd, err := unix.Open(area, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Syncfs(fd)
		}},
		{"2000", func(ops []store.RedoOp, area string) error { return SyncStaged(ops, []string{area}) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			buf := make([]byte, 1024)
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				d, err := os.MkdirTemp("/var/tmp", "txexec-bench-sync-")
				if err != nil {
					b.Fatal(err)
				}
				area := filepath.Join(d, "staging")
				if err := os.Mkdir(area, 0o700); err != nil {
					b.Fatal(err)
				}
				ops := make([]store.RedoOp, n)
				for j := range ops {
					src := filepath.Join(area, fmt.Sprint(j))
					if err := os.WriteFile(src, buf, 0o644); err != nil {
						b.Fatal(err)
					}
					ops[j] = store.RedoOp{Kind: store.OpRename, Src: src, Path: filepath.Join(d, fmt.Sprint(j)), Ino: inoOf(b, src)}
				}
				b.StartTimer()
				err = v.sync(ops, area)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(d)
				unix.Sync()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
		})
	}
}
