package syscalls

import (
	"math"
	"math/bits"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/signals"
)

// The kill family. A call whose targets all belong to the transaction is
// answered CONTINUE before anything is read from the caller's memory: the
// kernel delivers it with its exact semantics. Any other call (a target
// outside the transaction, or none at all) is emulated by package signals:
// checked with the caller's credentials, insiders signalled now, outsiders
// queued until commit (docs/semantics.md §4).

// Kill implements kill(2).
func Kill(k *Kernel, c *interpose.Call) interpose.Reply {
	pid := int(c.Args[0].Int())
	sig := int(c.Args[1].Int())
	if k.PidNamespace && pid != 0 {
		// Any pid or group it can name is in the namespace (the
		// caller's own group, pid 0, may hold outsiders: txexec's).
		return interpose.Continue()
	}
	t := signals.Target{Scope: signals.ScopeProcess, ID: pid}
	switch {
	case pid == math.MinInt32:
		// kill_something_info: -INT_MIN is not a process group.
		return interpose.Fail(unix.ESRCH)
	case pid == 0:
		t = signals.Target{Scope: signals.ScopeGroup} // the caller's group
	case pid == -1:
		t = signals.Target{Scope: signals.ScopeAll}
	case pid < -1:
		t = signals.Target{Scope: signals.ScopeGroup, ID: -pid}
	}
	return k.sendSignal(c, "kill", t, sig, noSigInfo)
}

// Tkill implements tkill(2).
func Tkill(k *Kernel, c *interpose.Call) interpose.Reply {
	tid := int(c.Args[0].Int())
	sig := int(c.Args[1].Int())
	if tid <= 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.sendSignal(c, "tkill", signals.Target{Scope: signals.ScopeThread, ID: tid}, sig, noSigInfo)
}

// Tgkill implements tgkill(2).
func Tgkill(k *Kernel, c *interpose.Call) interpose.Reply {
	tgid := int(c.Args[0].Int())
	tid := int(c.Args[1].Int())
	sig := int(c.Args[2].Int())
	if tid <= 0 || tgid <= 0 {
		return interpose.Fail(unix.EINVAL)
	}
	return k.sendSignal(c, "tgkill", signals.Target{Scope: signals.ScopeThread, ID: tid, Tgid: tgid}, sig, noSigInfo)
}

// RtSigqueueinfo implements rt_sigqueueinfo(2).
func RtSigqueueinfo(k *Kernel, c *interpose.Call) interpose.Reply {
	tgid := int(c.Args[0].Int())
	sig := int(c.Args[1].Int())
	infoAddr := c.Args[2].Pointer()
	return k.sendSignal(c, "rt_sigqueueinfo", signals.Target{Scope: signals.ScopeProcess, ID: tgid}, sig, infoAddr)
}

// RtTgsigqueueinfo implements rt_tgsigqueueinfo(2).
func RtTgsigqueueinfo(k *Kernel, c *interpose.Call) interpose.Reply {
	tgid := int(c.Args[0].Int())
	tid := int(c.Args[1].Int())
	sig := int(c.Args[2].Int())
	infoAddr := c.Args[3].Pointer()
	if tid <= 0 || tgid <= 0 {
		if k.Signals == nil || k.Signals.Policy == signals.Immediate {
			return interpose.Continue()
		}
		// The kernel copies the siginfo in before it checks the ids.
		if _, err := copyInSigInfo(c, infoAddr); err != nil {
			return k.reply(c, 0, err)
		}
		return interpose.Fail(unix.EINVAL)
	}
	return k.sendSignal(c, "rt_tgsigqueueinfo", signals.Target{Scope: signals.ScopeThread, ID: tid, Tgid: tgid}, sig, infoAddr)
}

// noSigInfo is the infoAddr of calls that take no siginfo (kill, tkill,
// tgkill); a NULL siginfo of rt_sigqueueinfo is a pointer like any other
// (EFAULT).
const noSigInfo = ^uintptr(0)

// sendSignal is the frame of the kill family except pidfd_send_signal.
func (k *Kernel) sendSignal(c *interpose.Call, call string, t signals.Target, sig int, infoAddr uintptr) interpose.Reply {
	r := k.Signals
	if r == nil || r.Policy == signals.Immediate || k.PidNamespace && t.Scope == signals.ScopeThread {
		return interpose.Continue()
	}
	th := k.Procs.Thread(c.Tid)
	if th == nil {
		return k.reply(c, 0, errUnknownThread(c.Tid))
	}
	plan, err := r.Plan(t, c.Tid, th.Proc.Tgid)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if plan.Native() {
		return interpose.Continue() // nothing read: CONTINUE is allowed
	}
	var info []byte
	if infoAddr != noSigInfo {
		if info, err = copyInSigInfo(c, infoAddr); err != nil {
			return k.reply(c, 0, err)
		}
		// As copy_siginfo_from_user does for the rt_*sigqueueinfo calls.
		signals.SetSigInfoSigno(info, sig)
		// Emulated means the target is not the caller (which is inside).
		if err := signals.CheckSigInfo(info); err != nil {
			return k.reply(c, 0, err)
		}
	}
	if err := c.Valid(); err != nil {
		return k.reply(c, 0, err)
	}
	s, err := k.sender(c.Tid)
	if err != nil {
		return k.reply(c, 0, err)
	}
	return k.reply(c, 0, r.Send(s, signals.Signal{Call: call, Sig: sig, Info: info, PidFD: -1}, plan))
}

// PidfdSendSignal implements pidfd_send_signal(2). It is always emulated
// while signals are deferred: the target is known only through the
// caller's descriptor table, which another thread could change between our
// look and the kernel's. The supervisor then sends the signal, so an
// insider receiving it without a siginfo sees txexec as the sender.
func PidfdSendSignal(k *Kernel, c *interpose.Call) interpose.Reply {
	pidfd := c.Args[0].Int()
	sig := int(c.Args[1].Int())
	infoAddr := c.Args[2].Pointer()
	flags := c.Args[3].Uint()
	r := k.Signals
	if r == nil || r.Policy == signals.Immediate {
		return interpose.Continue()
	}
	const known = unix.PIDFD_SIGNAL_THREAD | unix.PIDFD_SIGNAL_THREAD_GROUP | unix.PIDFD_SIGNAL_PROCESS_GROUP
	if flags&^known != 0 || bits.OnesCount32(flags) > 1 {
		return interpose.Fail(unix.EINVAL)
	}
	fd, err := c.GetFD(int(pidfd))
	if err != nil {
		return k.reply(c, 0, err)
	}
	owned := fd
	defer func() {
		if owned >= 0 {
			unix.Close(owned)
		}
	}()
	pid, thread, err := pidfdTarget(fd)
	if err != nil {
		return k.reply(c, 0, err)
	}
	scope := signals.ScopeProcess
	switch {
	case flags == unix.PIDFD_SIGNAL_THREAD, flags == 0 && thread:
		scope = signals.ScopeThread
	case flags == unix.PIDFD_SIGNAL_PROCESS_GROUP:
		scope = signals.ScopeGroup
	}
	var info []byte
	if infoAddr != 0 {
		if info, err = copyInSigInfo(c, infoAddr); err != nil {
			return k.reply(c, 0, err)
		}
		if signals.SigInfoSigno(info) != int32(sig) {
			return interpose.Fail(unix.EINVAL)
		}
		// "Only allow sending arbitrary signals to yourself."
		if pid != c.Tid || scope == signals.ScopeGroup {
			if err := signals.CheckSigInfo(info); err != nil {
				return k.reply(c, 0, err)
			}
		}
	}
	if pid <= 0 {
		return interpose.Fail(unix.ESRCH) // the process has been reaped
	}
	t := signals.Target{Scope: scope, ID: pid}
	if scope == signals.ScopeGroup {
		task, err := r.Tasks.Task(pid)
		if err != nil {
			return k.reply(c, 0, err)
		}
		t.ID = task.Pgrp
	}
	th := k.Procs.Thread(c.Tid)
	if th == nil {
		return k.reply(c, 0, errUnknownThread(c.Tid))
	}
	plan, err := r.Plan(t, c.Tid, th.Proc.Tgid)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if err := c.Valid(); err != nil {
		return k.reply(c, 0, err)
	}
	s, err := k.sender(c.Tid)
	if err != nil {
		return k.reply(c, 0, err)
	}
	sent := signals.Signal{Call: "pidfd_send_signal", Sig: sig, Info: info, PidFD: -1}
	if scope != signals.ScopeGroup {
		// The caller's own pidfd pins the target exactly.
		sent.PidFD, owned = fd, -1
	}
	return k.reply(c, 0, r.Send(s, sent, plan))
}

// copyInSigInfo copies a siginfo_t in (EFAULT as the kernel's
// copy_siginfo_from_user).
func copyInSigInfo(c *interpose.Call, addr uintptr) ([]byte, error) {
	info := make([]byte, signals.SigInfoSize)
	if err := c.Read(addr, info); err != nil {
		return nil, err
	}
	return info, nil
}

// sender describes the calling thread for the kill(2) permission rules.
func (k *Kernel) sender(tid int) (signals.Sender, error) {
	th := k.Procs.Thread(tid)
	if th == nil {
		return signals.Sender{}, errUnknownThread(tid)
	}
	cred, err := th.Cred()
	if err != nil {
		return signals.Sender{}, err
	}
	return signals.Sender{Tid: tid, Tgid: th.Proc.Tgid, UID: cred.UID, EUID: cred.EUID,
		CapKill: cred.HasCap(unix.CAP_KILL)}, nil
}
