package signals

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
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
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return Task{}, unix.ESRCH
	}
	return parseStatus(tid, b)
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

// parseStatus reads the fields of /proc/TID/status a signal needs.
func parseStatus(tid int, b []byte) (Task, error) {
	t := Task{Tid: tid}
	var have int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "State":
			t.Zombie = f[0] == "Z" || f[0] == "X"
			have |= 1
		case "Tgid":
			t.Tgid, _ = strconv.Atoi(f[0])
			have |= 2
		case "NSpgid":
			// The innermost namespace's id is the last field; the
			// supervisor and the tracees share one pid namespace.
			t.Pgrp, _ = strconv.Atoi(f[len(f)-1])
			have |= 4
		case "NSsid":
			t.Session, _ = strconv.Atoi(f[len(f)-1])
			have |= 8
		case "Uid":
			ids, err := parseIDs(f)
			if err != nil {
				return Task{}, err
			}
			t.UID, t.EUID, t.SUID = ids[0], ids[1], ids[2]
			have |= 16
		case "Gid":
			ids, err := parseIDs(f)
			if err != nil {
				return Task{}, err
			}
			t.GID, t.EGID, t.SGID = ids[0], ids[1], ids[2]
			have |= 32
		}
	}
	if have != 63 {
		return Task{}, fmt.Errorf("parse /proc/%d/status: fields missing", tid)
	}
	return t, nil
}

func parseIDs(f []string) ([3]uint32, error) {
	var ids [3]uint32
	if len(f) < 3 {
		return ids, fmt.Errorf("parse ids %q", f)
	}
	for i := range ids {
		n, err := strconv.ParseUint(f[i], 10, 32)
		if err != nil {
			return ids, fmt.Errorf("parse ids %q: %w", f, err)
		}
		ids[i] = uint32(n)
	}
	return ids, nil
}
