// Package signals decides what happens to a signal sent by a process of a
// transaction (docs/semantics.md §4): delivered at once when every process it
// reaches is in the transaction; queued, in order, when it reaches a
// process outside it, then delivered at commit (after write-through) and
// dropped at abort. --signals=immediate (Policy Immediate) opts out.
//
// A Router is one transaction's: it knows which threads are inside (a
// func over the session's proc.Table, given by the caller), where other
// processes are looked up (Tasks: /proc in production), and the Queue of
// signals held for commit. The syscall handlers (package syscalls) decode
// the kill family, ask Plan whether the kernel may run the call as is
// (every target inside: CONTINUE, exact semantics), and otherwise Send it:
// the permission rules of kill(2) are checked here against the caller's
// credentials, insiders get the signal now, outsiders a queued Delivery.
//
// Linux analogue: kernel/signal.c's kill_something_info, __kill_pgrp_info,
// do_send_specific and check_kill_permission. Unlike Linux:
//   - a queued signal is sent at commit by txexec, so its receiver sees
//     txexec's pid and uid as the sender (si_pid, si_uid), except when the
//     caller gave the siginfo itself (rt_sigqueueinfo, rt_tgsigqueueinfo,
//     pidfd_send_signal with info), which is replayed byte for byte;
//   - the targets of a process-group or kill(-1) signal are the members at
//     the time of the call (each pinned with a pidfd, so that a recycled pid
//     is never signalled), not at commit;
//   - the supervisor (txexec itself) is never a target of a group or
//     kill(-1) signal: natively it does not exist, and it must survive to
//     report the outcome;
//   - a signal to a zombie outsider succeeds and is not queued: it would
//     have no effect natively either.
//
// Signals sent to processes of the transaction from outside are not seen
// here at all: the kernel delivers them (SIGKILL and SIGSTOP always at once).
//
// It must not know about files, views, SQL or seccomp; it does not import
// proc (the caller passes membership as a func).
//
// Lock order: Queue.mu only; Router holds no lock of its own.
package signals
