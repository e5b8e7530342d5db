package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// commitDir is where BenchmarkCommit2000 makes its work and state
// directories: a disk file system, since the cost it measures is that of
// making 2000 new files durable.
const commitDir = "/var/tmp"

// commitSource is the program every BenchmarkCommit2000 variant runs: one
// process that creates 2000 files of 1024 zero bytes in
// its directory argument and then calls sync(2), so that only the
// supervision differs between the variants.
const commitSource = `#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	static char buf[1024];
	char path[4096];
	int i;
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (i = 0; i < 2000; i++) {
		int fd;
		snprintf(path, sizeof path, "%s/f%d", argv[1], i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) { perror(path); return 1; }
		if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) { perror(path); return 1; }
		if (close(fd) != 0) { perror(path); return 1; }
	}
	sync();
	return 0;
}
`

// buildCommit compiles commitSource with "cc -O2" into a temporary
// directory and returns the binary's path; without a C compiler the
// benchmark is skipped.
func buildCommit(b *testing.B) string {
	b.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		b.Skipf("bench: no C compiler (cc) in PATH, cannot build the commit fixture: %v", err)
	}
	dir := b.TempDir()
	src := filepath.Join(dir, "commit.c")
	if err := os.WriteFile(src, []byte(commitSource), 0o644); err != nil {
		b.Fatalf("bench: %v", err)
	}
	bin := filepath.Join(dir, "commit")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-o", bin, src).CombinedOutput(); err != nil {
		b.Fatalf("bench: %s -O2 commit.c: %v\n%s", cc, err, out)
	}
	return bin
}

// BenchmarkCommit2000 times one process creating 2000 files of 1 KiB and
// calling sync(2) in a fresh directory under /var/tmp: natively, under
// `txexec --state-dir S --` (a durable transaction, commit included) and
// under `txexec --no-durable --state-dir S --`, each with a fresh state
// directory S under /var/tmp. The target is tx-durable at most 2x
// native+sync. Making and removing the directories (and a sync after
// the removal) is not timed. ns/call is one run. With TXEXEC_BENCH_BASE,
// the base build's transactions (tx-durable-base, tx-nodurable-base)
// alternate with this build's, for an optimization's history.
func BenchmarkCommit2000(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("bench: txexec needs root (seccomp supervisor, state directory); not root")
	}
	if st, err := os.Stat(commitDir); err != nil || !st.IsDir() {
		b.Skipf("bench: %s is not a directory: %v", commitDir, err)
	}
	bin := buildCommit(b)
	type variant struct {
		name string
		// prefix is the command line before the fixture's, given the
		// state directory (nil = native).
		prefix func(b *testing.B, state string) []string
	}
	variants := []variant{{"native+sync", func(*testing.B, string) []string { return nil }}}
	for _, v := range []struct{ name, flag string }{{"tx-durable", ""}, {"tx-nodurable", "--no-durable"}} {
		flags := func(state string) []string {
			if v.flag == "" {
				return []string{"--state-dir", state, "--"}
			}
			return []string{v.flag, "--state-dir", state, "--"}
		}
		variants = append(variants, variant{v.name, func(b *testing.B, state string) []string {
			return append([]string{txexecBinary(b)}, flags(state)...)
		}})
		if base := os.Getenv(BaseEnv); base != "" {
			variants = append(variants, variant{v.name + "-base", func(_ *testing.B, state string) []string {
				return append([]string{base}, flags(state)...)
			}})
		}
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			v.prefix(b, "") // build txexec before the timer runs
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				dir := tempDirIn(b, commitDir, "txexec-bench-commit-")
				state := tempDirIn(b, commitDir, "txexec-bench-state-")
				argv := append(v.prefix(b, state), bin, dir)
				cmd := exec.Command(argv[0], argv[1:]...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				b.StartTimer()
				err := cmd.Run()
				b.StopTimer()
				if err != nil {
					b.Fatalf("bench: %s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
				}
				if _, err := os.Stat(filepath.Join(dir, "f1999")); err != nil {
					b.Fatalf("bench: %s: fixture's files not committed: %v", strings.Join(argv, " "), err)
				}
				os.RemoveAll(dir)
				os.RemoveAll(state)
				// Start the next run with nothing dirty for its sync.
				syscall.Sync()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
		})
	}
}
