package bench

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

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
	host, err := vfs.NewHost()
	if err != nil {
		b.Fatal(err)
	}
	v, err := vfs.NewTx(host, b.TempDir(), vfs.TxOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	root, err := v.OpenDir("/")
	if err != nil {
		b.Fatal(err)
	}
	c := &vfs.Caller{Tid: os.Getpid(), Tgid: os.Getpid(), Cred: &proc.Cred{CapEff: ^uint64(0)}, Cwd: root, Root: root, Umask: 0o022}
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
