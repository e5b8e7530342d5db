// Package syscalls is the system-call table and its thin handlers: the one
// place that knows both the mechanism (package interpose) and the
// subsystems (vfs, proc, signals, txn).
//
// Every x86-64 system call has one Entry in Entries (entries.go), keyed by
// its unix.SYS_* number, with its support level, handler, note and trace
// argument formats; a call decided by one argument's value (ioctl by
// request, clone by namespace flag) lists its values as Cases, which the
// filter tells apart from the registers. From that one list derive: the seccomp filter
// (Table.Rules), the --trace formatting (trace.go), docs/syscalls.md
// (docs.go, checked by a golden test) — never two tables kept in step by
// hand. txexec's own calls, the in-program transaction API (txapi.go:
// xbegin, xend, xabort, xpause, xresume), are rows of the same table
// (PseudoEntries), numbered far above Linux's.
//
// The view a call is served by is chosen per thread (Kernel.serving): a
// thread that began a transaction of its own, and what it created since,
// is served by a copy of the Kernel with that transaction's view, locks
// and signal router (programs.go); every other thread by the Kernel's own.
//
// A deterministic run replaces a few rows with those of
// DeterministicEntries (determ.go: the clocks, sleeps, getrandom, uname,
// sched_getaffinity, served from a determ.Env), and its opens of the
// random devices and CPU lists return descriptors of the environment's
// (determ_files.go).
//
// A handler always runs in the same order: decode registers (accessors
// named after C types) → copy pointer arguments in, once → Kernel.enter
// (the notification is still valid, the caller's credentials and cwd, the
// dirfd's handle) → act in the caller's vfs.View → copy results out →
// reply. A handler that read tracee memory can never answer CONTINUE:
// interpose refuses it.
//
// Linux analogue: the sys_* entry points of fs/ and kernel/. Unlike Linux,
// the caller's working directory is virtual (package proc), and a handler
// may run concurrently with other handlers of the same process.
//
// It must not contain SQL, file-system semantics (vfs decides those) or
// notification mechanics (interpose).
//
// Lock order (programs.go): proc's Table.mu, then binding.mu, then
// programTx.mu and proc's FS.mu and Thread.mu; Programs.mu is a leaf. No
// lock is held across a commit, an abort or an ordered wait.
package syscalls
