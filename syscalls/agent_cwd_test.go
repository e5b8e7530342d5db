package syscalls

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/proc"
)

// TestAgentCwdsLeft: a child that shared its parent's address space
// (posix_spawn's vfork) and execs without any working directory published
// meanwhile leaves the parent's page alone; one during whose sharing a
// working directory was published (its chdir) has the parent's published
// again when it leaves, at its exec or its exit.
func TestAgentCwdsLeft(t *testing.T) {
	var published []int
	k := &Kernel{Procs: proc.NewTable(), AgentCwds: &AgentCwds{Publish: func(tid int, _ interpose.AgentCwd) error {
		published = append(published, tid)
		return nil
	}}}
	k.Procs.AddRoot(100, nil)
	const spawn = unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)

	k.agentCwdsClone(100, 101, spawn)
	k.agentCwdsLeft(101)
	assert.Empty(t, published, "nothing published while 101 shared the address space")

	for _, child := range []int{102, 103} {
		published = nil
		k.agentCwdsClone(100, child, spawn)
		k.AgentCwds.mu.Lock()
		k.publishCwdLocked(child) // its chdir (cwdChanged)
		k.AgentCwds.mu.Unlock()
		k.agentCwdsLeft(child)
		assert.Equal(t, []int{child, 100}, published, "the parent's published again after %d left", child)
	}

	// A thread shares everything for good: not a sharer.
	published = nil
	k.agentCwdsClone(100, 104, spawn|unix.CLONE_THREAD)
	k.AgentCwds.mu.Lock()
	k.publishCwdLocked(100)
	k.AgentCwds.mu.Unlock()
	k.agentCwdsLeft(104)
	assert.Equal(t, []int{100}, published)
}
