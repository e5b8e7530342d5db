package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The load BenchmarkInProgramServer puts on the example server: concurrent
// clients, deliveries each, and mailboxes they pick from at random.
const (
	serverClients  = 8
	serverRequests = 100
	serverUsers    = 16
)

// InProgramServerConfigs are BenchmarkInProgramServer's sub-benchmarks, in
// the order the report shows them: the example mail server
// (examples/maildir) with a flock per mailbox natively and under txexec
// (the cost of being supervised), with one transaction per request
// (txexec/tx) without and with fsync, and with flock and fsync natively
// (the durable baseline).
var InProgramServerConfigs = []struct {
	Name, Doc string
	// underTxexec are txexec's options; nil: native.
	underTxexec []string
	serve       []string
}{
	{"flock-native", "flock per mailbox, native", nil, []string{"-mode", "flock"}},
	{"flock-txexec", "flock per mailbox, under txexec --in-program", []string{"--in-program"}, []string{"-mode", "flock"}},
	{"tx-nondurable", "one transaction per request, txexec --in-program --no-durable", []string{"--in-program", "--no-durable"}, []string{"-mode", "tx"}},
	{"tx-durable", "one transaction per request, txexec --in-program (durable)", []string{"--in-program"}, []string{"-mode", "tx"}},
	{"flock-fsync-native", "flock per mailbox with fsyncs, native", nil, []string{"-mode", "flock", "-fsync"}},
}

var (
	maildirOnce sync.Once
	maildirBin  string
	maildirErr  error
)

// maildirBinary builds examples/maildir once per run.
func maildirBinary(tb testing.TB) string {
	tb.Helper()
	maildirOnce.Do(func() {
		dir, err := os.MkdirTemp("", "txexec-bench-maildir-")
		if err != nil {
			maildirErr = err
			return
		}
		onceDirs = append(onceDirs, dir) // removed by TestMain
		maildirBin = filepath.Join(dir, "maildir")
		if out, err := exec.Command("go", "build", "-o", maildirBin, "txexec/examples/maildir").CombinedOutput(); err != nil {
			maildirErr = &buildError{err: err, out: out}
		}
	})
	if maildirErr != nil {
		tb.Fatalf("bench: build examples/maildir: %v", maildirErr)
	}
	return maildirBin
}

// BenchmarkInProgramServer runs the example mail server (examples/maildir)
// under concurrent clients, each iteration a whole run: the server started
// on an empty tree, serverClients clients sending serverRequests
// deliveries each to serverUsers mailboxes, the server stopped, the tree
// checked (every acknowledged delivery present once, index and summary in
// step). It works under /var/tmp, like the workloads: the disk is part of
// what a durable commit costs. deliveries/s is over the drivers' time;
// runs/delivery counts the re-runs of deliveries that lost a conflict.
func BenchmarkInProgramServer(b *testing.B) {
	if st, err := os.Stat(workloadDir); err != nil || !st.IsDir() {
		b.Skipf("bench: %s is not a directory: %v", workloadDir, err)
	}
	txexec := txexecBinary(b)
	maildir := maildirBinary(b)
	for _, cfg := range InProgramServerConfigs {
		b.Run(cfg.Name, func(b *testing.B) {
			var busy time.Duration
			var runs int
			for i := 0; i < b.N; i++ {
				d, n := serverRun(b, txexec, maildir, cfg.underTxexec, cfg.serve)
				busy += d
				runs += n
			}
			deliveries := b.N * serverClients * serverRequests
			b.ReportMetric(float64(deliveries)/busy.Seconds(), "deliveries/s")
			b.ReportMetric(float64(runs)/float64(deliveries), "runs/delivery")
		})
	}
}

// serverRun is one run of the server; it returns how long the clients took
// and how many runs of deliveries the server made.
func serverRun(b *testing.B, txexec, maildir string, underTxexec, serve []string) (time.Duration, int) {
	b.Helper()
	dir := tempDirIn(b, workloadDir, "txexec-bench-maildir-")
	mail, sock, acks := filepath.Join(dir, "mail"), filepath.Join(dir, "sock"), filepath.Join(dir, "acks")
	if err := os.Mkdir(mail, 0o755); err != nil {
		b.Fatal(err)
	}
	argv := append([]string{maildir, "serve", "-dir", mail, "-socket", sock}, serve...)
	if underTxexec != nil {
		argv = append(append(append([]string{txexec}, underTxexec...), "--"), argv...)
	}
	server := exec.Command(argv[0], argv[1:]...)
	server.Env = append(os.Environ(), "TXEXEC_STATE_DIR="+filepath.Join(dir, "state"))
	var serverOut, serverErr bytes.Buffer
	server.Stdout, server.Stderr = &serverOut, &serverErr
	if err := server.Start(); err != nil {
		b.Fatal(err)
	}
	defer server.Process.Kill()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(sock); err == nil && st.Mode()&os.ModeSocket != 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("bench: the server did not listen: %s", serverErr.String())
		}
	}
	out, err := exec.Command(maildir, "drive", "-socket", sock, "-out", acks,
		"-clients", fmt.Sprint(serverClients), "-requests", fmt.Sprint(serverRequests), "-users", fmt.Sprint(serverUsers)).CombinedOutput()
	if err != nil {
		b.Fatalf("bench: drive: %v\n%s\nserver: %s", err, out, serverErr.String())
	}
	var n, clients int
	var secs float64
	if _, err := fmt.Sscanf(string(out), "%d deliveries by %d clients in %fs", &n, &clients, &secs); err != nil {
		b.Fatalf("bench: drive's output %q: %v", out, err)
	}
	if err := server.Wait(); err != nil {
		b.Fatalf("bench: server: %v\n%s", err, serverErr.String())
	}
	if out, err := exec.Command(maildir, "check", "-dir", mail, "-acks", acks).CombinedOutput(); err != nil {
		b.Fatalf("bench: check: %v\n%s", err, out)
	}
	var delivered, runs int
	if _, err := fmt.Sscanf(serverOut.String(), "served %d deliveries in %d runs", &delivered, &runs); err != nil || delivered != n {
		b.Fatalf("bench: the server's account %q (%v): want %d deliveries", serverOut.String(), err, n)
	}
	return time.Duration(secs * float64(time.Second)), runs
}
