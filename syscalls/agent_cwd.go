package syscalls

import (
	"errors"
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/proc"
	"txexec/vfs"
)

// AgentCwds keeps the working directory that the fast-lookup agent of each
// address space knows (interpose.AgentCwd, docs/fastpath.md §4.5, rule 2)
// the view's, so that the agent can take paths relative to it and answer
// getcwd: published when an emulated chdir or fchdir succeeds, before the
// reply, into every address space whose threads use the context it
// changed, and at every exec with the agent's configuration. It is
// unknown where no one working directory belongs to the address space
// (proc.Table.SpaceFS): threads of it that use different contexts (a vfork
// child beside its parent, a thread cloned without CLONE_FS), or a context
// shared with another address space (CLONE_FS without CLONE_VM), whose
// page a chdir would have to change too. A child that shared its parent's
// address space or context and execs or exits may leave the parent's its
// own again: the parent's is published again then, if anything was
// published meanwhile (a posix_spawn's child that only execs changes
// nothing: the parent's page still holds what it did).
type AgentCwds struct {
	// Publish writes cwd into the agent of the address space of thread
	// tid (interpose.FastLookups.PublishCwd).
	Publish func(tid int, cwd interpose.AgentCwd) error
	// Identity publishes the directory's identity with its path: under
	// --passthrough, where the agent checks that the path still resolves
	// to it (the host may rename it; in a transaction the read set has
	// the path's entries, and the view names it by the path it keeps).
	Identity bool

	// mu makes a publication (reading the context, writing the agent's
	// page) one at a time, so that the last one written is of the
	// context's last working directory.
	mu sync.Mutex
	// sharers are the processes that share the address space or the
	// context of the process that cloned them (CLONE_VM or CLONE_FS
	// without CLONE_THREAD), by pid, and that one's pid and whether a
	// working directory was published since the clone.
	// +checklocks:mu
	sharers map[int]sharer
}

// sharer is a process that shares the address space or the context of
// its parent (AgentCwds.sharers).
type sharer struct {
	parent int
	// published says a working directory was published, into some
	// address space, since the clone: the parent's may differ from what
	// its page holds.
	published bool
}

// cwdChanged publishes the working directory of fs, which a chdir or
// fchdir just changed, into every address space whose threads use it.
func (k *Kernel) cwdChanged(fs *proc.FS) {
	a := k.AgentCwds
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, tid := range k.Procs.SpacesUsing(fs) {
		k.publishCwdLocked(tid)
	}
}

// AgentCwd is the working directory of process tgid for the agent of its
// new image, stopped at its exec (interpose.FastLookups.Cwd).
func (k *Kernel) AgentCwd(tgid int) interpose.AgentCwd {
	a := k.AgentCwds
	if a == nil {
		return interpose.AgentCwd{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return k.agentCwd(tgid)
}

// agentCwdsClone notes a process that shares its parent's address space
// or context.
func (k *Kernel) agentCwdsClone(parentTgid, child int, flags uint64) {
	a := k.AgentCwds
	if a == nil || flags&(unix.CLONE_VM|unix.CLONE_FS) == 0 || flags&unix.CLONE_THREAD != 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sharers == nil {
		a.sharers = map[int]sharer{}
	}
	a.sharers[child] = sharer{parent: parentTgid}
}

// agentCwdsLeft publishes again the working directory of the address space
// of the process that cloned process pid, which shared it or its context,
// now that pid has execed (a new address space; the context it keeps) or
// exited, if any was published since the clone: else the parent's page
// still holds its own (§15 of docs/fastpath.md: a publication costs the
// tracer's thread an open of /proc/PID/mem and four system calls more, at
// the exec of every child that posix_spawn or vfork started).
func (k *Kernel) agentCwdsLeft(pid int) {
	a := k.AgentCwds
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sh, ok := a.sharers[pid]
	if !ok {
		return
	}
	delete(a.sharers, pid)
	if sh.published && k.Procs.Thread(sh.parent) != nil {
		k.publishCwdLocked(sh.parent)
	}
}

// publishCwdLocked publishes the working directory of the address space of
// thread tid. An address space whose agent could not be told (its memory
// could be read but not written) would go on answering from a working
// directory it no longer has: its process is killed, as one whose exec
// could not be made safe is.
//
// Preconditions: k.AgentCwds.mu held.
func (k *Kernel) publishCwdLocked(tid int) {
	a := k.AgentCwds
	// Whichever address space this is, a sharer's parent may be in it
	// or use a context published here: each republishes when it leaves.
	for pid, sh := range a.sharers {
		if !sh.published {
			sh.published = true
			a.sharers[pid] = sh
		}
	}
	err := a.Publish(tid, k.agentCwd(tid))
	if err == nil || errors.Is(err, unix.ESRCH) || errors.Is(err, os.ErrNotExist) || unix.Kill(tid, 0) != nil {
		return // done, or the process is gone
	}
	k.Logf("txexec: killed pid %d: cannot tell its fast-lookup agent its working directory: %v", tid, err)
	unix.Kill(tid, unix.SIGKILL)
}

// agentCwd is the working directory of the address space of thread tid,
// as the agent is to know it: the path getcwd answers in the view, when
// it is absolute and clean, and one working directory belongs to the
// address space; else unknown.
func (k *Kernel) agentCwd(tid int) interpose.AgentCwd {
	fs := k.Procs.SpaceFS(tid)
	t := k.Procs.Thread(tid)
	if fs == nil || t == nil || fs.RootChanged() {
		return interpose.AgentCwd{}
	}
	cwd, root, _ := fs.Get()
	defer cwd.Release()
	defer root.Release()
	h := cwd.(*vfs.Handle)
	cl := &vfs.Caller{Tid: tid, Tgid: t.Proc.Tgid, Cwd: h, Root: root.(*vfs.Handle)}
	p, err := k.View.Getcwd(cl)
	if err != nil || !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return interpose.AgentCwd{}
	}
	c := interpose.AgentCwd{Path: p}
	if k.AgentCwds.Identity {
		var st unix.Stat_t
		if h.FD() < 0 || unix.Fstat(h.FD(), &st) != nil {
			return interpose.AgentCwd{}
		}
		c.Dev, c.Ino = st.Dev, st.Ino
	}
	return c
}
