// Package sysx holds the raw system calls the supervisor makes for itself:
// EINTR retried, errors wrapped, and the per-thread credential switch under
// which host file-system calls run on behalf of a tracee; and FileClock,
// the time the kernel stamps files with.
//
// It must not know about tracees, views or transactions.
package sysx
