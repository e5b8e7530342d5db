// Package sysx holds the raw system calls the supervisor makes for itself:
// EINTR retried, errors wrapped, and the per-thread credential switch under
// which host file-system calls run on behalf of a tracee; FileClock, the
// time the kernel stamps files with; and the scheduling class of the Go
// runtime's monitor thread (BatchRuntimeMonitor, UnbatchThread).
//
// It must not know about tracees, views or transactions.
package sysx
