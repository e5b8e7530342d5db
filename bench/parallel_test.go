package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ParallelCPULoop is how many iterations of an awk loop give each command
// of BenchmarkParallel its CPU time: about 1 s on this machine when quiet.
const ParallelCPULoop = 30_000_000

// ParallelCommandN is how many commands each BenchmarkParallel workload
// runs.
const ParallelCommandN = 16

// parallelWorkloads are BenchmarkParallel's lists of shell command lines:
// independent commands (CPU, then 50 small files in a directory of their
// own), a chain (CPU, then an append to the one file the previous command
// appended to: each reads what the one before wrote) and a mix (every
// fourth command of the chain, the others independent).
var parallelWorkloads = []struct {
	name  string
	chain func(k int) bool // whether command k (from 1) is in the chain
}{
	{"independent", func(int) bool { return false }},
	{"chain", func(int) bool { return true }},
	{"mix", func(k int) bool { return k%4 == 0 }},
}

func parallelLines(chain func(k int) bool) []string {
	cpu := fmt.Sprintf("awk 'BEGIN { for (i = 0; i < %d; i++) s += i }'", ParallelCPULoop)
	var lines []string
	for k := 1; k <= ParallelCommandN; k++ {
		if chain(k) {
			lines = append(lines, fmt.Sprintf("%s; echo %d >> chain", cpu, k))
		} else {
			lines = append(lines, fmt.Sprintf("%s; mkdir d%d; for j in $(seq 50); do echo %d.$j > d%d/f$j; done", cpu, k, k, k))
		}
	}
	return lines
}

// BenchmarkParallel times each workload of 16 commands (~1 s of CPU and
// some file writes each) run: natively one after another (native-serial)
// and by xargs -P N (xargs-PN: side by side, no transactions, nothing
// ordered); under txexec one after another, one transaction each
// (serial); and by txexec parallel -j N (parallel-jN), in a fresh
// directory under /var/tmp with a fresh state directory (durable
// commits on the disk). ns/op is the wall time of the whole list. Every
// txexec variant's chain must end 1..16 in input order, the result of a
// serial run, or the benchmark fails.
func BenchmarkParallel(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("bench: txexec needs root (seccomp supervisor, state directory); not root")
	}
	for _, tool := range []string{"awk", "xargs", "seq"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("bench: %s is not installed: %v", tool, err)
		}
	}
	txexec := txexecBinary(b)
	type variant struct {
		name string
		// run runs the lines in dir with state directory state.
		run func(lines []string, dir, state string) error
		tx  bool // committed in order: check the chain
	}
	script := func(lines []string) string { return strings.Join(lines, "\n") + "\n" }
	sh := func(dir, stdin string, argv ...string) error {
		c := exec.Command(argv[0], argv[1:]...)
		c.Dir = dir
		c.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Run(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out.String())
		}
		return nil
	}
	variants := []variant{
		{"native-serial", func(lines []string, dir, _ string) error { return sh(dir, script(lines), "sh") }, false},
		{"serial", func(lines []string, dir, state string) error {
			for _, l := range lines {
				if err := sh(dir, "", txexec, "--state-dir", state, "--", "sh", "-c", l); err != nil {
					return err
				}
			}
			return nil
		}, true},
	}
	for _, j := range []int{1, 2, 4} {
		variants = append(variants, variant{fmt.Sprintf("parallel-j%d", j), func(lines []string, dir, state string) error {
			return sh(dir, script(lines), txexec, "parallel", "--state-dir", state, fmt.Sprintf("-j%d", j))
		}, true})
	}
	for _, p := range []int{2, 4} {
		variants = append(variants, variant{fmt.Sprintf("xargs-P%d", p), func(lines []string, dir, _ string) error {
			return sh(dir, script(lines), "xargs", "-d", "\n", "-n", "1", "-P", fmt.Sprint(p), "sh", "-c")
		}, false})
	}
	var want strings.Builder
	for _, w := range parallelWorkloads {
		lines := parallelLines(w.chain)
		want.Reset()
		for k := 1; k <= ParallelCommandN; k++ {
			if w.chain(k) {
				fmt.Fprintf(&want, "%d\n", k)
			}
		}
		for _, v := range variants {
			b.Run(w.name+"/"+v.name, func(b *testing.B) {
				b.StopTimer()
				for i := 0; i < b.N; i++ {
					dir := tempDirIn(b, commitDir, "txexec-bench-parallel-")
					state := tempDirIn(b, commitDir, "txexec-bench-state-")
					b.StartTimer()
					err := v.run(lines, dir, state)
					b.StopTimer()
					if err != nil {
						b.Fatalf("bench: %s: %v", v.name, err)
					}
					if v.tx && want.Len() > 0 {
						got, err := os.ReadFile(filepath.Join(dir, "chain"))
						if err != nil || string(got) != want.String() {
							b.Fatalf("bench: %s: the chain is %q (%v), not that of a serial run", v.name, got, err)
						}
					}
					os.RemoveAll(dir)
					os.RemoveAll(state)
				}
			})
		}
	}
}
