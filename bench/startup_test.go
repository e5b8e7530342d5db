package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStartup times whole runs of `txexec [--passthrough] -- true`:
// txexec's fixed cost (starting the supervisor and the stub, the filter,
// the store, and committing an empty transaction), which every command
// pays once. ns/call is one run. With TXEXEC_BENCH_BASE, the base build's
// runs alternate with this build's, for an optimization's history; make
// bench leaves it out (its "empty transaction" workload times the same).
func BenchmarkStartup(b *testing.B) {
	type build struct{ suffix, txexec string }
	builds := []build{{"", txexecBinary(b)}}
	if base := os.Getenv(BaseEnv); base != "" {
		builds = append(builds, build{"-base", base})
	}
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"passthrough", []string{"--passthrough"}}, {"tx", []string{"--no-durable"}}} {
		for _, bd := range builds {
			b.Run(mode.name+bd.suffix, func(b *testing.B) {
				state := filepath.Join(b.TempDir(), "state")
				argv := append(append([]string{"--state-dir", state}, mode.flags...), "--", "true")
				for i := 0; i < b.N; i++ {
					if out, err := exec.Command(bd.txexec, argv...).CombinedOutput(); err != nil {
						b.Fatalf("bench: %s %v: %v\n%s", bd.txexec, argv, err, out)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
			})
		}
	}
}
