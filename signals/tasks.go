package signals

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"txexec/internal/procfs"
)

// Tasks is where the targets of a signal are looked up.
type Tasks interface {
	// Task describes thread tid (any thread id, not only a group leader);
	// unix.ESRCH when there is none.
	Task(tid int) (Task, error)
	// Processes lists every thread group (its leader's Task).
	Processes() ([]Task, error)
}

// ProcTasks reads tasks from /proc (the supervisor's pid namespace, which
// is the tracees').
type ProcTasks struct{}

var _ Tasks = ProcTasks{}

// Task implements Tasks from /proc/TID/status.
func (ProcTasks) Task(tid int) (Task, error) {
	if tid <= 0 {
		return Task{}, unix.ESRCH
	}
	f, err := procfs.Status(tid)
	if err != nil {
		return Task{}, unix.ESRCH
	}
	return taskOf(tid, f)
}

// Processes implements Tasks by listing /proc.
func (p ProcTasks) Processes() ([]Task, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []Task
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		t, err := p.Task(pid)
		if err != nil {
			continue // exited meanwhile
		}
		out = append(out, t)
	}
	return out, nil
}

// taskOf reads the fields of /proc/TID/status a signal needs.
func taskOf(tid int, f procfs.Fields) (Task, error) {
	t := Task{Tid: tid}
	state := f.Words("State")
	if len(state) == 0 {
		return Task{}, fmt.Errorf("parse /proc/%d/status: no State field", tid)
	}
	uids, err := f.IDs("Uid")
	if err == nil {
		t.Zombie = state[0] == "Z" || state[0] == "X"
		var gids [4]uint32
		gids, err = f.IDs("Gid")
		t.UID, t.EUID, t.SUID = uids[0], uids[1], uids[2]
		t.GID, t.EGID, t.SGID = gids[0], gids[1], gids[2]
	}
	if err == nil {
		t.Tgid, err = f.Int("Tgid")
	}
	if err == nil {
		// The innermost namespace's id is the last field; the
		// supervisor and the tracees share one pid namespace.
		t.Pgrp, err = f.LastInt("NSpgid")
	}
	if err == nil {
		t.Session, err = f.LastInt("NSsid")
	}
	if err != nil {
		return Task{}, fmt.Errorf("parse /proc/%d/status: %w", tid, err)
	}
	return t, nil
}
