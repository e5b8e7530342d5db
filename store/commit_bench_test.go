package store

import (
	"fmt"
	"testing"
)

// BenchmarkCommitReads: the commit of a transaction that looked up many
// host paths and changed two of them (a read-mostly run: man-db's trigger
// under dpkg looks at about 20,000 paths, a build at thousands), durable,
// with its state directory in the test's temporary directory. ns/call is
// the store's cost per read record at the commit point, validation apart
// (validate is nil here: its cost is the caller's).
func BenchmarkCommitReads(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{Durable: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			reads := make([]ReadRecord, n)
			for i := range reads {
				reads[i] = ReadRecord{Path: fmt.Sprintf("/usr/share/man/man1/page%05d.1.gz", i), Exists: true,
					Dev: 2049, Ino: uint64(100000 + i), Type: 0o100000, Meta: true, Data: i%3 == 0,
					Mode: 0o100644, Size: 4096, Mtime: Timespec{Sec: 1_700_000_000, Nsec: int64(i)},
					Ctime: Timespec{Sec: 1_700_000_000, Nsec: int64(i)}}
			}
			ops := []RedoOp{
				{Kind: OpRename, Path: reads[7].Path, Src: "/staging/1"},
				{Kind: OpRename, Path: "/usr/share/man/man1/new.1.gz", Src: "/staging/2"},
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tx, err := s.Begin(TxInfo{Command: []string{"bench"}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Commit(tx.ID, nil, Prepared{Ops: ops, Writes: append(granules(ops[0].Path), granules(ops[1].Path)...), Reads: reads}); err != nil {
					b.Fatal(err)
				}
				if err := s.MarkApplied(tx.ID); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
		})
	}
}
