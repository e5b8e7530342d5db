package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"txexec/fastlookup"
	"txexec/proc"
	"txexec/vfs"
)

// BenchmarkViewLookup times what a transaction's view spends on a lookup of
// a host object it has walked before, called directly (no notification, no
// copy-in or copy-out): stat of a header and readlink of /usr (EINVAL, as
// cc1's realpath makes it), each served from the view's cached nodes and
// recorded in its read set. It bounds what feeding one record of the fast
// path of docs/fastpath.md would cost the supervisor, which §5 there needs.
func BenchmarkViewLookup(b *testing.B) {
	const header = "/usr/include/stdio.h"
	if _, err := os.Stat(header); err != nil {
		b.Skipf("bench: %s: %v", header, err)
	}
	v, _, c := benchView(b, vfs.TxOptions{})
	defer v.Close()
	lookups := []struct {
		name string
		do   func() error
	}{
		{"stat", func() error {
			_, err := v.Stat(c, c.Cwd, header, 0 /* flags */)
			return err
		}},
		{"readlink-einval", func() error {
			if _, err := v.Readlink(c, c.Cwd, "/usr"); !errors.Is(err, unix.EINVAL) {
				return errors.Join(errors.New("readlink /usr: want EINVAL"), err)
			}
			return nil
		}},
	}
	for _, l := range lookups {
		b.Run(l.name, func(b *testing.B) {
			if err := l.do(); err != nil { // the first walk, not timed
				b.Fatal(err)
			}
			for b.Loop() {
				if err := l.do(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFastLookupFeed times what feeding one record of the fast path
// (docs/fastpath.md §4.7) costs the supervisor, beside BenchmarkViewLookup:
// a record of the agent's lstat of a header, and of its readlink of /usr
// made as an lstat (EINVAL), each appended to a process's ring and drained
// into the view's read set (FeedFastLookups: the ring's checks, the walk
// through the cached nodes, the comparison with the observed identity).
// "batch" drains 64 records at a time, as a drain before a notified call
// would find them after a burst of fast calls. "stat-shared-parent" feeds,
// in batches of 64, records of stats of 256 files of one directory deep in
// a tree (usr/share/man/man1 in a temporary directory), in turn, as
// mandb's lookups of the man pages come (each fed once before timing: the
// view's first host lookup of a name is not what is measured).
func BenchmarkFastLookupFeed(b *testing.B) {
	const header = "/usr/include/stdio.h"
	if _, err := os.Stat(header); err != nil {
		b.Skipf("bench: %s: %v", header, err)
	}
	tree, err := fastlookup.NewTree()
	if err != nil {
		b.Fatal(err)
	}
	defer tree.Close()
	tree.Enable(true)
	ring, err := fastlookup.NewRing()
	if err != nil {
		b.Fatal(err)
	}
	defer ring.Close()
	v, root, c := benchView(b, vfs.TxOptions{FastLookups: tree})
	defer v.Close()                                                   // before the tree's deferred Close, as TxOptions asks
	if _, err := v.Stat(c, root, header, 0 /* flags */); err != nil { // the view walks /usr/include
		b.Fatal(err)
	}
	record := func(path string, nr int) fastlookup.Record {
		gen, ok := tree.Decide(path)
		if !ok {
			b.Fatalf("the agent would forward %s", path)
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			b.Fatal(err)
		}
		r := fastlookup.Record{Generation: gen, Nr: nr, Path: path, Observed: true,
			Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, UID: st.Uid, GID: st.Gid, Size: st.Size, Mtime: st.Mtim, Ctime: st.Ctim}
		if nr == unix.SYS_READLINK {
			r.Result = -int64(unix.EINVAL)
		}
		return r
	}
	feeds := []struct {
		name  string
		rec   fastlookup.Record
		batch int
	}{
		{"stat", record(header, unix.SYS_NEWFSTATAT), 1},
		{"readlink-einval", record("/usr", unix.SYS_READLINK), 1},
		{"stat-batch", record(header, unix.SYS_NEWFSTATAT), 64},
	}
	man1 := filepath.Join(b.TempDir(), "usr/share/man/man1")
	if err := os.MkdirAll(man1, 0o755); err != nil {
		b.Fatal(err)
	}
	var pages []fastlookup.Record
	for i := range 256 {
		p := filepath.Join(man1, fmt.Sprintf("page%d.1.gz", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		if i == 0 { // the view walks man1, which becomes a fast directory
			if _, err := v.Stat(c, root, p, 0 /* flags */); err != nil {
				b.Fatal(err)
			}
		}
		pages = append(pages, record(p, unix.SYS_NEWFSTATAT))
	}
	feed := func(recs []fastlookup.Record) {
		for i := range recs {
			if !ring.Append(&recs[i]) {
				b.Fatal("ring full")
			}
		}
		if _, err := v.FeedFastLookups(ring); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < len(pages); i += 64 {
		feed(pages[i : i+64])
	}
	// loop appends the i-th record of each iteration and feeds the ring
	// every batch records.
	loop := func(b *testing.B, rec func(i int) *fastlookup.Record, batch int) {
		i := 0
		for b.Loop() {
			if !ring.Append(rec(i)) {
				b.Fatal("ring full")
			}
			if i++; i%batch != 0 {
				continue
			}
			if _, err := v.FeedFastLookups(ring); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := v.FeedFastLookups(ring); err != nil {
			b.Fatal(err)
		}
		if err := v.Doomed(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("stat-shared-parent", func(b *testing.B) {
		loop(b, func(i int) *fastlookup.Record { return &pages[i%len(pages)] }, 64)
	})
	for _, f := range feeds {
		b.Run(f.name, func(b *testing.B) {
			loop(b, func(int) *fastlookup.Record { return &f.rec }, f.batch)
		})
	}
}

// benchView makes a transaction's view over the host, which the caller
// closes, its root, and a caller with every capability at that root.
func benchView(b *testing.B, opt vfs.TxOptions) (*vfs.Tx, *vfs.Handle, *vfs.Caller) {
	b.Helper()
	host, err := vfs.NewHost()
	if err != nil {
		b.Fatal(err)
	}
	v, err := vfs.NewTx(host, b.TempDir(), opt)
	if err != nil {
		b.Fatal(err)
	}
	root, err := v.OpenDir("/")
	if err != nil {
		b.Fatal(err)
	}
	return v, root, &vfs.Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: root, Root: root, Umask: 0o022}
}
