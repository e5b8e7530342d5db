// Package determ is the deterministic environment of a run under
// --deterministic: a virtual clock, one seeded random stream per task
// derived from the run's seed and the task's place in the process tree,
// and the fixed names (host name, CPU count) supervised processes see
// (docs/semantics.md §10).
//
// Linux analogue: none; it stands in for the kernel's timekeeping
// (clock_gettime, nanosleep), its entropy pool (getrandom, /dev/urandom,
// AT_RANDOM) and a UTS namespace, the way hermit's detcore does, but only
// for what the supervisor intercepts.
//
// A task's place is the path of fork indexes from the command: the
// command is "0", its second child "0.1", that child's first "0.1.0".
// Places, unlike pids, repeat from run to run whenever each process
// forks in the same order, whatever the scheduler does between
// processes. The clock is one for the whole tree (times stay ordered
// between processes); it moves by Step on every read, so it repeats
// when the order of the calls that read it does.
//
// It must not know about seccomp, tracee memory, files or transactions:
// package syscalls asks it for times and bytes and writes them out.
//
// Lock order: Env.mu only.
package determ
