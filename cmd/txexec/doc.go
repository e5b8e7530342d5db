// Command txexec runs a program as one ACID file-system transaction.
//
// This package owns flags, subcommands, messages and exit statuses, and
// wires the subsystems together; it knows nothing of how any of them work.
//
//	txexec [options] -- COMMAND [ARG...]
//	txexec log | show ID | commit ID | abort ID | recover
//	txexec parallel [-j N] [--keep-going] [--json] [options] [-- CMD ::: CMD...]
//
// txexec parallel (parallel.go) runs each command as a child txexec (this
// binary, re-executed) whose commit waits at a gate (gate.go) for its turn
// in input order; a command waiting for a host lock there, or refused one
// it tried, stops the later commands that may hold it, and a refused try is
// run again (parallel_locks.go).
//
// See README.md and docs/ for the user guide and docs/semantics.md for what
// is guaranteed. Two environment variables serve the benchmarks, not
// users: TXEXEC_STATS and TXEXEC_CPUPROFILE (benchhooks.go).
package main
