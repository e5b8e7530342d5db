package txn

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"txexec/store"
)

// BenchmarkPreflight: the preflight of a commit that places 2000 new files
// from the staging area into one directory (what LFS-small's create phase
// and the RAB mkdir phase commit); ns/call is per redo op.
func BenchmarkPreflight(b *testing.B) {
	const n = 2000
	d := b.TempDir()
	staging, dir := filepath.Join(d, "staging"), filepath.Join(d, "dir")
	for _, p := range []string{staging, dir} {
		if err := os.Mkdir(p, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	ops := make([]store.RedoOp, n)
	for i := range ops {
		src := filepath.Join(staging, fmt.Sprint(i))
		if err := os.WriteFile(src, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		ops[i] = store.RedoOp{Kind: store.OpRename, Src: src, Path: filepath.Join(dir, fmt.Sprint(i)), Ino: inoOf(b, src)}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := Preflight(ops); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
}
