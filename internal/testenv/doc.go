// Package testenv holds what the tests of several packages share about the
// machine they run on: when a test may skip for want of root or a tool
// (never in CI, where a skipped test would hide a missing install step),
// and the inode flags (chattr +i, +a) of the files they make.
//
// Only tests and the benchmarks (bench, bench/floor) import it. It must
// not know about txexec's own packages beyond internal/sysx.
package testenv
