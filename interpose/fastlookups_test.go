package interpose

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// TestAgentBlobIsCurrent: the embedded agent is the build of agent/agent.c
// and agent/agent.ld by agent/build.sh (run go generate ./interpose after
// changing them).
func TestAgentBlobIsCurrent(t *testing.T) {
	for _, tool := range []string{"gcc", "ld"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipOrFail(t, "%s is not installed: %v", tool, err)
		}
	}
	out := filepath.Join(t.TempDir(), "agent.bin")
	b, err := exec.Command("sh", "agent/build.sh", out).CombinedOutput()
	require.NoError(t, err, "agent/build.sh:\n%s", b)
	built, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(built, agentBlob), "interpose/agent/agent.bin is stale: run go generate ./interpose")
	// Its layout (agent.ld): code within the pages before the
	// configuration page.
	assert.Less(t, len(agentBlob), agentConfigOff)
	assert.Greater(t, len(agentBlob), agentEntryOff)
}

// TestGoImage: the exec stop recognises a Go program (this test binary)
// and a C one.
func TestGoImage(t *testing.T) {
	assert.True(t, goImage(os.Getpid()))
	cmd := exec.Command("sleep", "10")
	require.NoError(t, cmd.Start())
	defer cmd.Wait()
	defer cmd.Process.Kill()
	assert.False(t, goImage(cmd.Process.Pid))
}

func TestFastLookupsConfig(t *testing.T) {
	f := &FastLookups{Base: DefaultAgentBase, Forwarded: []string{"/proc", "/dev/"}}
	require.NoError(t, f.check())
	page, err := f.configPage()
	require.NoError(t, err)
	assert.Equal(t, "txagent2", string(page[:8]))
	assert.Equal(t, "/proc\x00/dev\x00\x00", string(page[agentDevsOff+8*agentDevN:][:12]))
	assert.NotZero(t, binary.LittleEndian.Uint32(page[12:]), "the devices of /proc and /dev")
	for _, bad := range []*FastLookups{
		{Base: DefaultAgentBase + 1},
		{Base: 1 << 31},
		{Base: DefaultAgentBase, Forwarded: []string{"relative"}},
	} {
		assert.Error(t, bad.check(), "%+v", bad)
	}
}

// TestFastLookupsSharedConfig: in a transaction the configuration page
// ends with the tree's and the ring's addresses, right below the agent
// (ring, then tree, whole pages); shared memory that does not fit below the
// agent is refused.
func TestFastLookupsSharedConfig(t *testing.T) {
	ring := func(int) (int, error) { return -1, nil }
	f := &FastLookups{Base: DefaultAgentBase, Shared: &SharedMemory{TreeSize: 3*4096 + 1, RingSize: 4096, Ring: ring}}
	require.NoError(t, f.check())
	page, err := f.configPage()
	require.NoError(t, err)
	assert.Equal(t, uint64(DefaultAgentBase-5*4096), binary.LittleEndian.Uint64(page[agentTreeOff:]))
	assert.Equal(t, uint64(DefaultAgentBase-4096), binary.LittleEndian.Uint64(page[agentRingOff:]))
	passthrough, err := (&FastLookups{Base: DefaultAgentBase}).configPage()
	require.NoError(t, err)
	assert.Zero(t, binary.LittleEndian.Uint64(passthrough[agentTreeOff:]))
	for _, bad := range []*SharedMemory{
		{TreeSize: 4096, RingSize: 4096},                         // no Ring
		{TreeSize: 0, RingSize: 4096, Ring: ring},                // no tree
		{TreeSize: DefaultAgentBase, RingSize: 4096, Ring: ring}, // below 0
	} {
		assert.Error(t, (&FastLookups{Base: DefaultAgentBase, Shared: bad}).check(), "%+v", bad)
	}
}
