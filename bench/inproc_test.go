package bench

import (
	"bytes"
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/proc"
	"txexec/store"
	"txexec/syscalls"
	"txexec/txn"
	"txexec/vfs"
)

// BenchmarkInProcess runs the fixture's intercepted operations under a
// supervisor that lives in the test process itself, wired as cmd/txexec
// wires it (syscall table, process table, host or transactional view), so
// that `go test -cpuprofile` / `-memprofile` see the supervisor's per-call
// path:
//
//	go test -run '^$' -bench 'InProcess/stat/tx' -benchtime 20000x \
//	    -cpuprofile cpu.out -memprofile mem.out ./bench/
//	go tool pprof -top bench.test cpu.out
//
// Its numbers are comparable with BenchmarkPerCall's passthrough and tx
// modes, not identical: the benchmark's own goroutines share the process.
//
// BenchmarkInProcess/stat/interpose is the Go floor: the stat calls are
// answered by a handler that does only what bench/floor's C supervisor does
// (copy the path in, fstatat, copy the result out, reply), on interpose's
// worker pool, without syscalls, proc or vfs.
func BenchmarkInProcess(b *testing.B) {
	bin := BuildPercall(b)
	for _, op := range []string{"stat", "statat", "open", "access", "create", "unlink", "link", "mkdir", "rmdir"} {
		b.Run(op, func(b *testing.B) {
			views := []string{"passthrough", "tx"}
			if op == "stat" {
				views = append([]string{"interpose"}, views...)
			}
			for _, view := range views {
				b.Run(view, func(b *testing.B) {
					ns := superviseInProcess(b, view, bin, op, max(b.N, minCalls))
					b.ReportMetric(ns, "ns/op")
					b.ReportMetric(ns, "ns/call")
				})
			}
		})
	}
}

// rawStat answers newfstatat of an absolute path as bench/floor's C
// supervisor does, and hands every other call to the kernel it wraps.
type rawStat struct{ *syscalls.Kernel }

func (h rawStat) Handle(c *interpose.Call) interpose.Reply {
	if c.Nr != unix.SYS_NEWFSTATAT || c.Args[0].Int() != unix.AT_FDCWD {
		return h.Kernel.Handle(c)
	}
	path, err := c.ReadPath(c.Args[1].Pointer())
	if err != nil {
		return interpose.FromError(err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(unix.AT_FDCWD, path, &st, int(c.Args[3].Int())); err != nil {
		return interpose.FromError(err)
	}
	if err := interpose.WriteValue(c.Memory, c.Args[2].Pointer(), &st); err != nil {
		return interpose.FromError(err)
	}
	return interpose.Return(0)
}

// superviseInProcess runs one fixture command under an in-process
// supervisor and returns the fixture's ns/call. view is "passthrough" (the
// host view), "tx" (a transaction, committed when the fixture exits) or
// "interpose" (rawStat over the host view).
func superviseInProcess(tb testing.TB, view, bin, op string, n int) float64 {
	tb.Helper()
	host, err := vfs.NewHost()
	if err != nil {
		tb.Fatal(err)
	}
	table, err := syscalls.NewTable(syscalls.Entries())
	if err != nil {
		tb.Fatal(err)
	}
	k := &syscalls.Kernel{
		Table:       table,
		Procs:       proc.NewTable(),
		View:        host,
		Unsupported: syscalls.PolicyAbort,
		Logf:        tb.Logf,
	}
	var h interpose.Handler = k
	if view == "interpose" {
		h = rawStat{k}
	}
	var t *txn.Transaction
	if view == "tx" {
		st, err := store.Open(TempDir(tb, "txexec-bench-state-"), store.Options{Durable: true})
		if err != nil {
			tb.Fatal(err)
		}
		defer st.Close()
		m := &txn.Manager{Store: st, Host: host, Durable: true}
		if t, err = m.Begin([]string{bin, op}, "/"); err != nil {
			tb.Fatal(err)
		}
		k.View = t.View
		k.OnInternalError = t.View.Doom
	}
	argv := PercallArgs(bin, op, WorkDir(tb), n)
	out, status := supervise(tb, k, h, argv)
	if t != nil {
		if status == 0 {
			if err := t.Commit(); err != nil {
				tb.Fatalf("bench: commit: %v", err)
			}
		} else {
			t.Abort("fixture failed")
		}
	}
	if status != 0 {
		tb.Fatalf("bench: %v exited with status %d: %s", argv, status, out)
	}
	ns, err := ParseNsPerCall(out)
	if err != nil {
		tb.Fatal(err)
	}
	return ns
}

// supervise runs argv under k (its calls answered by h) as cmd/txexec does
// and returns its standard output and exit status.
func supervise(tb testing.TB, k *syscalls.Kernel, h interpose.Handler, argv []string) ([]byte, int) {
	tb.Helper()
	cwd, err := k.View.OpenDir("/")
	if err != nil {
		tb.Fatal(err)
	}
	root, err := k.View.OpenDir("/")
	if err != nil {
		tb.Fatal(err)
	}
	// The supervisor applies the caller's umask itself.
	umask := unix.Umask(0)
	defer unix.Umask(umask)
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	var copied sync.WaitGroup
	copied.Add(1)
	go func() { defer copied.Done(); out.ReadFrom(r) }()
	s, err := interpose.Start(interpose.Config{
		Path:    argv[0],
		Argv:    argv,
		Env:     os.Environ(),
		Dir:     "/",
		Umask:   uint32(umask),
		Files:   [3]*os.File{os.Stdin, w, os.Stderr},
		Rules:   k.Table.Rules(),
		Handler: h,
		Events:  &rootRegistrar{Kernel: k, fs: proc.NewFS(cwd, root, uint32(umask))},
		Logf:    k.Logf,
	})
	w.Close()
	if err != nil {
		tb.Fatal(err)
	}
	ws, err := s.Wait()
	if err != nil {
		tb.Fatal(err)
	}
	copied.Wait()
	return out.Bytes(), interpose.ExitStatus(ws)
}

// rootRegistrar registers the command's first thread when the tracer first
// reports it (its execve), as cmd/txexec does.
type rootRegistrar struct {
	*syscalls.Kernel
	fs   *proc.FS
	once sync.Once
}

func (r *rootRegistrar) Exec(req *interpose.ExecRequest) interpose.ExecPlan {
	r.once.Do(func() { r.Procs.AddRoot(req.Tid, r.fs) })
	return r.Kernel.Exec(req)
}
