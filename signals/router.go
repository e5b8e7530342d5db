package signals

import (
	"errors"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// Router decides the fate of the signals one transaction's processes send.
type Router struct {
	Policy Policy
	// Tasks looks targets up (ProcTasks{} in production).
	Tasks Tasks
	// Inside reports whether thread (or thread group) id belongs to the
	// transaction.
	Inside func(id int) bool
	// Supervisor is txexec's own pid: never a target of a group or kill(-1)
	// signal (see doc.go).
	Supervisor int
	// Queue holds the signals for outsiders until commit.
	Queue *Queue
	// Logf reports deliveries that failed at commit (never nil after
	// NewRouter).
	Logf func(format string, args ...any)

	// send delivers one signal now, pin prepares a queued one (opens its
	// pidfd); replaced by tests.
	send func(d *Delivery) error
	pin  func(d *Delivery) error
}

// NewRouter makes a router with an empty queue.
func NewRouter(policy Policy, tasks Tasks, inside func(int) bool, supervisor int, logf func(string, ...any)) *Router {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Router{Policy: policy, Tasks: tasks, Inside: inside, Supervisor: supervisor,
		Queue: &Queue{}, Logf: logf, send: (*Delivery).sendNow, pin: (*Delivery).pinTarget}
}

// Plan is the targets of one call, split by membership.
type Plan struct {
	Target  Target
	Inside  []Task
	Outside []Task
}

// Native reports whether the kernel may run the call itself (CONTINUE):
// it reaches at least one process and all of them are in the transaction.
// A call that reaches nothing is answered by Send (ESRCH), not by the
// kernel, so that a pid created meanwhile by an outsider is never hit.
func (p Plan) Native() bool { return len(p.Outside) == 0 && len(p.Inside) > 0 }

// Plan resolves t to the tasks it reaches now, for a call made by thread
// tid of thread group tgid (ScopeGroup with ID 0 is the caller's process
// group; kill(-1) spares the caller's thread group). Thread and process
// targets that do not exist, or (tgkill) are not in the named group, give
// an empty plan.
func (r *Router) Plan(t Target, tid, tgid int) (Plan, error) {
	if t.Scope == ScopeGroup && t.ID == 0 {
		self, err := r.Tasks.Task(tid)
		if err != nil {
			return Plan{Target: t}, err
		}
		t.ID = self.Pgrp
	}
	p := Plan{Target: t}
	var tasks []Task
	switch t.Scope {
	case ScopeProcess, ScopeThread:
		task, err := r.Tasks.Task(t.ID)
		if errors.Is(err, unix.ESRCH) {
			return p, nil
		}
		if err != nil {
			return p, err
		}
		if t.Scope == ScopeThread && t.Tgid > 0 && task.Tgid != t.Tgid {
			return p, nil
		}
		tasks = []Task{task}
	case ScopeGroup, ScopeAll:
		if t.Scope == ScopeGroup && t.ID <= 0 {
			return p, nil
		}
		all, err := r.Tasks.Processes()
		if err != nil {
			return p, err
		}
		for _, task := range all {
			if task.Tgid == r.Supervisor {
				continue
			}
			if t.Scope == ScopeGroup && task.Pgrp != t.ID {
				continue
			}
			// kill(-1): "all processes for which the calling process has
			// permission to send signals, except for process 1 (init)"
			// and, as Linux does, the caller itself.
			if t.Scope == ScopeAll && (task.Tgid == 1 || task.Tgid == tgid) {
				continue
			}
			tasks = append(tasks, task)
		}
		sort.Slice(tasks, func(i, j int) bool { return tasks[i].Tgid < tasks[j].Tgid })
	}
	for _, task := range tasks {
		if r.Inside(task.Tid) || r.Inside(task.Tgid) {
			p.Inside = append(p.Inside, task)
		} else {
			p.Outside = append(p.Outside, task)
		}
	}
	return p, nil
}

// Signal is what a call sends.
type Signal struct {
	// Call names the system call, for messages.
	Call string
	Sig  int
	// Info is the caller's siginfo_t (SigInfoSize bytes), nil for kill,
	// tkill and tgkill.
	Info []byte
	// PidFD, if >= 0, is the supervisor's duplicate of the caller's pidfd
	// (pidfd_send_signal on a single target): Send takes ownership.
	PidFD int
}

// Send performs a call whose plan is not Native: it checks the caller's
// permission for every target as Linux does, signals the insiders now, and
// queues the signal for the outsiders (Policy Defer) or sends it now
// (Immediate). It returns the call's result: nil or an errno.
func (r *Router) Send(s Sender, sig Signal, p Plan) error {
	owned := sig.PidFD
	defer func() {
		if owned >= 0 {
			unix.Close(owned)
		}
	}()
	session := func(tid int) (int, error) {
		t, err := r.Tasks.Task(tid)
		return t.Session, err
	}
	deliver := func(t Task, inside bool) error {
		if err := mayKill(s, t, sig.Sig, session); err != nil {
			return err
		}
		if sig.Sig == 0 || t.Zombie {
			// An existence check, or a zombie on which a signal has no
			// effect: nothing to send, now or later.
			return nil
		}
		d := &Delivery{Call: sig.Call, Sig: sig.Sig, Info: sig.Info, Thread: p.Target.Scope == ScopeThread,
			Tgid: t.Tgid, Tid: t.Tid, pidfd: -1}
		if p.Target.Scope != ScopeThread {
			d.Tid = t.Tgid
		}
		if owned >= 0 {
			d.pidfd, owned = owned, -1
		}
		if inside || r.Policy == Immediate {
			err := r.send(d)
			d.close()
			if errors.Is(err, unix.ESRCH) {
				// Exited between the check and now: Linux answers 0
				// when the target dies under a signal being sent.
				return nil
			}
			return err
		}
		if err := r.pin(d); err != nil {
			d.close()
			if errors.Is(err, unix.ESRCH) {
				return nil
			}
			return err
		}
		r.Queue.add(d)
		return nil
	}
	switch p.Target.Scope {
	case ScopeProcess, ScopeThread:
		if len(p.Inside)+len(p.Outside) == 0 {
			return unix.ESRCH
		}
		if len(p.Inside) > 0 {
			return deliver(p.Inside[0], true)
		}
		return deliver(p.Outside[0], false)
	case ScopeGroup:
		// __kill_pgrp_info: success if any member got it, else the last
		// error; ESRCH for an empty group.
		var last error = unix.ESRCH
		success := false
		for _, t := range p.Inside {
			last = deliver(t, true)
			success = success || last == nil
		}
		for _, t := range p.Outside {
			last = deliver(t, false)
			success = success || last == nil
		}
		if success {
			return nil
		}
		return last
	case ScopeAll:
		// kill_something_info(-1): ESRCH if there was nobody to try;
		// otherwise the last error that is not EPERM.
		count := 0
		var ret error
		for i, t := range append(append([]Task{}, p.Inside...), p.Outside...) {
			err := deliver(t, i < len(p.Inside))
			count++
			if !errors.Is(err, unix.EPERM) {
				ret = err
			}
		}
		if count == 0 {
			return unix.ESRCH
		}
		return ret
	}
	return unix.EINVAL
}

// Commit sends the queued signals, in order — except those for txexec
// itself (`kill $PPID` from the command), which wait until beforeSelf has
// run: their default action would end txexec before it released the
// transaction's held output. It returns how many were delivered.
func (r *Router) Commit(beforeSelf func()) int {
	n := 0
	send := func(d *Delivery) {
		if err := r.send(d); err != nil {
			if !errors.Is(err, unix.ESRCH) {
				r.Logf("txexec: could not deliver signal %d (%s) to pid %d at commit: %v", d.Sig, d.Call, d.Tid, err)
			}
		} else {
			n++
		}
		d.close()
	}
	var self []*Delivery
	for _, d := range r.Queue.take() {
		if d.Tgid == os.Getpid() {
			self = append(self, d)
			continue
		}
		send(d)
	}
	if beforeSelf != nil {
		beforeSelf()
	}
	for _, d := range self {
		send(d)
	}
	return n
}

// Abort drops the queued signals and returns how many there were.
func (r *Router) Abort() int {
	ds := r.Queue.take()
	for _, d := range ds {
		d.close()
	}
	return len(ds)
}
