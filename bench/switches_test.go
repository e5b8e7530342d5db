package bench

import (
	"math"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSwitchesCountTheTree: a shell that waits for 20 children in turn
// switches out at least once per child, and the counts include the
// children's; the test process's own switches before the command's exec
// are not counted (a command that blocks on nothing counts next to none).
func TestSwitchesCountTheTree(t *testing.T) {
	sw := Switches()
	t.Log(sw.Describe())
	trueBin, err := exec.LookPath("true")
	require.NoError(t, err)
	c, err := sw.Run(exec.Command("sh", "-c", "i=0; while [ $i -lt 20 ]; do "+trueBin+"; i=$((i+1)); done"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, c.Switches, 20.0)
	if sw.Why == "" {
		assert.False(t, math.IsNaN(c.Migrations))
		one, err := sw.Run(exec.Command(trueBin))
		require.NoError(t, err)
		// Counted for its tree alone: fewer than the shell that ran 20 of
		// them, however loaded the machine (a preempted true switches out
		// too, so no small fixed bound).
		assert.Less(t, one.Switches, c.Switches, "true switches out less than a shell running 20 of them")
	} else {
		assert.True(t, math.IsNaN(c.Migrations), "no migrations from rusage")
	}
	_, err = sw.Run(exec.Command("false"))
	assert.Error(t, err, "the command's own failure")
}
