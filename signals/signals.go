package signals

import (
	"encoding/binary"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Policy is what happens to a signal sent out of the transaction.
type Policy uint8

const (
	// Defer queues it until commit and drops it at abort (the default).
	Defer Policy = iota
	// Immediate lets the kernel deliver it at once (--signals=immediate).
	Immediate
)

// ParsePolicy parses a --signals value.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "defer":
		return Defer, nil
	case "immediate":
		return Immediate, nil
	}
	return 0, fmt.Errorf("unknown signal policy %q (expected defer or immediate)", s)
}

// Scope is what a signal-sending call reaches.
type Scope uint8

const (
	// ScopeProcess: one thread group (kill with pid > 0, rt_sigqueueinfo,
	// pidfd_send_signal on a process).
	ScopeProcess Scope = iota
	// ScopeThread: one thread (tkill, tgkill, rt_tgsigqueueinfo,
	// pidfd_send_signal on a thread).
	ScopeThread
	// ScopeGroup: every process of a process group (kill with pid 0 or
	// -pgid, pidfd_send_signal with PIDFD_SIGNAL_PROCESS_GROUP).
	ScopeGroup
	// ScopeAll: every process the caller may signal except init and itself
	// (kill with pid -1).
	ScopeAll
)

// Target is the decoded target of a call.
type Target struct {
	Scope Scope
	// ID is the pid (ScopeProcess: any thread id names its group), the
	// tid (ScopeThread) or the pgid (ScopeGroup); unused for ScopeAll.
	ID int
	// Tgid, for ScopeThread, is the thread group the thread must belong to
	// (tgkill, rt_tgsigqueueinfo); 0 accepts any (tkill).
	Tgid int
}

// Task is a thread, or with Tid == Tgid a process, as /proc shows it.
type Task struct {
	Tid, Tgid     int
	Pgrp, Session int
	// Real, effective and saved user and group ids.
	UID, EUID, SUID uint32
	GID, EGID, SGID uint32
	Zombie          bool
}

// Sender is the calling thread, as the kill(2) permission rules see it.
type Sender struct {
	Tid, Tgid int
	// UID and EUID are the caller's real and effective user ids.
	UID, EUID uint32
	// CapKill: CAP_KILL is in the caller's effective set.
	CapKill bool
}

// NSig is _NSIG: the highest valid signal number.
const NSig = 64

// validSignal is the kernel's valid_signal(): 0 (existence check) to _NSIG.
func validSignal(sig int) bool { return sig >= 0 && sig <= NSig }

// mayKill applies check_kill_permission (kernel/signal.c) for a signal
// from s to t: "For a process to have permission to send a signal, it must
// either be privileged (CAP_KILL), or the real or effective user ID of the
// sending process must equal the real or saved set-user-ID of the target
// process. In the case of SIGCONT, it suffices when the sending and
// receiving processes belong to the same session." (kill(2)). session is
// asked only for SIGCONT.
func mayKill(s Sender, t Task, sig int, session func(tid int) (int, error)) error {
	if !validSignal(sig) {
		return unix.EINVAL
	}
	if t.Tgid == s.Tgid {
		return nil
	}
	if s.EUID == t.SUID || s.EUID == t.UID || s.UID == t.SUID || s.UID == t.UID || s.CapKill {
		return nil
	}
	if sig == int(unix.SIGCONT) {
		if own, err := session(s.Tid); err == nil && own == t.Session && (own != 0 || sessionZeroIsReal()) {
			return nil
		}
	}
	return unix.EPERM
}

// initPidNSInode is PROC_PID_INIT_INO (include/linux/proc_ns.h), the inode
// number /proc/self/ns/pid has in the initial pid namespace.
const initPidNSInode = 0xEFFFFFFC

// sessionZeroIsReal says whether session id 0 names one session. In the
// initial pid namespace it does: processes descended from init that never
// called setsid share init's session, whose id is 0. In a nested pid
// namespace 0 only says "the session leader is not visible here", which two
// different sessions can both show, so equal zeros prove nothing and
// SIGCONT across them is refused (docs/semantics.md lists this).
var sessionZeroIsReal = sync.OnceValue(func() bool {
	var st unix.Stat_t
	return unix.Stat("/proc/self/ns/pid", &st) == nil && st.Ino == initPidNSInode
})

// SigInfoSize is sizeof(siginfo_t).
const SigInfoSize = 128

// SI_TKILL is the si_code of tkill/tgkill (not in golang.org/x/sys/unix).
const siTkill = -6

// CheckSigInfo applies the rule of rt_sigqueueinfo(2), rt_tgsigqueueinfo(2)
// and pidfd_send_signal(2) for a siginfo sent to another process: "the
// caller can't send a signal with si_code >= 0 or SI_TKILL to another
// process, since it could then impersonate the kernel or kill(2)" (EPERM).
// info is the copied-in siginfo_t.
func CheckSigInfo(info []byte) error {
	if len(info) < 12 {
		return unix.EFAULT
	}
	code := int32(binary.NativeEndian.Uint32(info[8:12]))
	if code >= 0 || code == siTkill {
		return unix.EPERM
	}
	return nil
}

// SigInfoSigno returns si_signo of a copied-in siginfo_t.
func SigInfoSigno(info []byte) int32 {
	return int32(binary.NativeEndian.Uint32(info[0:4]))
}

// SetSigInfoSigno sets si_signo, as rt_sigqueueinfo does with its sig
// argument.
func SetSigInfoSigno(info []byte, sig int) {
	binary.NativeEndian.PutUint32(info[0:4], uint32(int32(sig)))
}
