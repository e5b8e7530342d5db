// Package interpose is the mechanism under the supervisor: it starts a
// command under a seccomp filter with a user-notification listener, receives
// and answers its system calls, reads and writes its memory, installs
// descriptors into it (ADDFD), and traces its process tree with ptrace.
//
// It owns: the init stub (a re-executed txexec that installs the filter on
// one locked thread, hands the listener back over SCM_RIGHTS and then execs
// the command); filter compilation (libseccomp, after a prologue txexec writes
// itself for the rules that depend on an argument's value, loaded with a
// raw seccomp(2) so that SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV can be set); the
// notification worker pool; Call, Arg, Memory and Reply; the ptrace tracer
// thread (fork/vfork/clone/exec events, group-stops, signal re-injection,
// execve path rewriting and its re-check at PTRACE_EVENT_EXEC); for
// deterministic runs, the pid namespace and its init (pidns.go: the stub
// re-executed as pid 1, which starts the real stub with a fixed pid and
// reaps), address randomization off, and the rewrite of a new image's
// auxiliary vector (auxv.go: the vDSO hidden, AT_RANDOM replaced); for
// --fast-lookups (docs/fastpath.md), the agent blob built from agent/ and
// embedded (fastlookups.go), its injection at every exec stop (inject.go:
// one code sequence, assembled by injectcode.go, run in one ptrace round
// trip; in a transaction with the memfds it is given, brought in by an
// injected openat the listener answers with ADDFD, and a new ring at every
// fork), and the rewrite of call sites to reach it (rewrite.go: glibc's
// two patterns, and every site known in a file rewritten with the first
// of a new mapping; an execve's site by the tracer once the plan failed
// it with ENOENT or ENOTDIR), and the working directory a caller gives it written
// into an agent's configuration (PublishCwd: a path, which interpose only
// copies).
//
// It must not know about transactions, files or the meaning of any system
// call beyond execve's register layout: what to do with a call is decided by
// the Handler and ProcessEvents it is given.
//
// Linux analogue: the system-call entry path and ptrace. Unlike the kernel,
// a reply can fail because the caller was killed while we served it: callers
// of Reply must tolerate that (the process is dying).
//
// Invariants:
//   - A Call whose memory was read is never answered with CONTINUE (enforced
//     in Call.send, docs/architecture.md §3).
//   - Every ptrace request is made from the tracer's locked thread.
//   - The tracer waits with __WNOTHREAD, so sessions in one process never see
//     each other's children.
//   - The tracer learns of every stop from wait4 alone: the supervisor's
//     SIGCHLD has SA_NOCLDSTOP (sigchld.go), so a tracee's ptrace stops send
//     it no signal.
//   - A worker thread is SCHED_IDLE only inside the C function that makes a
//     descriptor reply's ADDFD (handoff.go): no Go code runs on it in that
//     class, so it never holds a runtime lock or a P while starved.
//
// Lock order: tracer.mu and listener.mu are leaves.
package interpose
