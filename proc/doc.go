// Package proc owns the supervised process tree: threads and thread groups,
// their parents, and the per-process virtual state the supervisor keeps for
// them — working directory and root (as view handles), umask, and
// credentials.
//
// Linux analogue: task_struct with its fs_struct (cwd, root, umask; shared
// by CLONE_FS) and cred, and which processes share an mm_struct (Space:
// CLONE_VM without CLONE_THREAD, until exec). Unlike Linux, the working directory and root are
// virtual: the kernel's own idea of the tracee's cwd is never updated,
// because chdir is emulated; every relative path is resolved by the
// supervisor against the virtual one.
//
// Credentials are not tracked call by call: a call that may change them
// (setuid family, capset, execve) marks the thread dirty, and the next
// intercepted call re-reads /proc/TID/status. A thread is sequential, so
// its next call always comes after the change took effect.
//
// It must not know about SQL, seccomp, or how directories are resolved
// (Dir is opaque here).
//
// Lock order: Table.mu, then FS.mu, then Thread.mu.
package proc
