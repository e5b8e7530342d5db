package interpose

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWillWaitSendsAReceiver: a handler about to wait for another process
// hands a standby worker the receiving position at once, rather than
// leaving the rest of the tree to the watchdog's next look; with a worker
// receiving already, or no listener (a call made in a test), it does
// nothing.
func TestWillWaitSendsAReceiver(t *testing.T) {
	l := &listener{}
	l.cfg.MaxWorkers = 1
	l.total.Store(1)
	l.standbyN.Store(1)
	c := &Call{listener: l}

	l.receivers.Store(1)
	c.WillWait()
	assert.Zero(t, l.handoffs.Load(), "a worker receives already: nothing to hand over")

	l.receivers.Store(0)
	c.WillWait()
	assert.EqualValues(t, 1, l.handoffs.Load(), "the standby worker is sent into RECV")

	// The one standby worker has its turn already: a second waiter
	// starts no one (MaxWorkers reached) and hands out no second turn.
	c.WillWait()
	assert.EqualValues(t, 1, l.handoffs.Load())
	assert.EqualValues(t, 1, l.total.Load())

	(&Call{}).WillWait() // no listener: no effect, no panic
}
