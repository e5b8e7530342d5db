package interpose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSchedPassOncePerInterval: a loop's pass through the scheduler
// happens at its first step and then once each time schedPassEvery has
// gone by, however often the loop steps in between.
func TestSchedPassOncePerInterval(t *testing.T) {
	var clock time.Duration
	yields := 0
	p := schedPass{now: func() time.Duration { return clock }, yield: func() { yields++ }}
	clock = schedPassEvery // a loop that starts well after the process
	p.step()
	assert.Equal(t, 1, yields, "the first step passes")
	for range 100 {
		clock += schedPassEvery / 100
		p.step()
	}
	assert.Equal(t, 2, yields, "100 steps over one interval pass once more, at its end")
	clock += 10 * schedPassEvery // a long wait
	p.step()
	p.step()
	assert.Equal(t, 3, yields, "after a long wait, one pass")
	clock += schedPassEvery - 1
	p.step()
	assert.Equal(t, 3, yields, "not before a whole interval")
}
