package bench

import (
	"os"
	"testing"
)

// BenchmarkFastLookups times the lookups the fast path takes
// (--fast-lookups, docs/fastpath.md; steps 1 and 2: the lookups by path, a
// read-only open, statat's fstatat relative to a directory descriptor, and
// ownfstat's fstat of a file the transaction created, docs/fastpath.md §16),
// and what the option adds to a fork and exec of a static program (the
// agent's injection, a ring of the child's own) and to a posix_spawn of it
// (spawn: a vfork, as make and gcc start their children, whose child
// shares its parent's ring until its exec), in the per-call fixture: natively, under `txexec --passthrough --`,
// under `txexec --passthrough --fast-lookups --` and in a transaction with
// the option, `txexec --fast-lookups --` (with BaseEnv, the base build's
// too: tx-fast-base), in one run. The fixture's first call of each site is
// served (and its site rewritten) among the warm-up calls, so the timed
// calls are the agent's. Not part of make bench (its report has no place
// for it yet):
//
//	go test ./bench -run '^$' -bench FastLookups -benchtime 2000x
func BenchmarkFastLookups(b *testing.B) {
	bin := BuildPercall(b)
	for _, op := range []string{"stat", "statx", "access", "open", "statat", "ownfstat", "exec", "spawn"} {
		b.Run(op, func(b *testing.B) {
			ms := []mode{
				{name: "native", prefix: func(testing.TB) []string { return nil }},
				{name: "passthrough", prefix: func(tb testing.TB) []string { return served(txexecBinary(tb), "--passthrough") }},
				{name: "passthrough-fast", prefix: func(tb testing.TB) []string {
					return []string{txexecBinary(tb), "--passthrough", "--fast-lookups", "--"}
				}},
				{name: "tx-fast", prefix: func(tb testing.TB) []string {
					return []string{txexecBinary(tb), "--fast-lookups", "--"}
				}},
			}
			if base := os.Getenv(BaseEnv); base != "" {
				ms = append(ms, mode{name: "tx-fast-base", prefix: func(testing.TB) []string {
					return []string{base, "--fast-lookups", "--"}
				}})
			}
			for _, m := range ms {
				b.Run(m.name, func(b *testing.B) {
					ns := runFixture(b, m, bin, op, calls(op, b.N))
					b.ReportMetric(ns, "ns/op")
					b.ReportMetric(ns, "ns/call")
				})
			}
		})
	}
}
