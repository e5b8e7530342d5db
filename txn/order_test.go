package txn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCommitOrderSettlesInOrder(t *testing.T) {
	var o CommitOrder
	const n = 32
	var mu sync.Mutex
	var order []uint64
	var wg sync.WaitGroup
	// Start the waiters in reverse so that arrival order is not commit order.
	for i := n - 1; i >= 0; i-- {
		wg.Add(1)
		go func(seq uint64) {
			defer wg.Done()
			require.NoError(t, o.Wait(context.Background(), seq))
			mu.Lock()
			order = append(order, seq)
			mu.Unlock()
			o.Done(seq)
		}(uint64(i))
	}
	wg.Wait()
	for i, seq := range order {
		require.Equal(t, uint64(i), seq)
	}
	require.Equal(t, uint64(n), o.Next())
}

func TestCommitOrderOutOfOrderDone(t *testing.T) {
	var o CommitOrder
	o.Done(2)
	o.Done(1)
	require.Equal(t, uint64(0), o.Next(), "a gap at 0 holds every later number back")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, o.Wait(ctx, 3), context.DeadlineExceeded)
	o.Done(0)
	require.Equal(t, uint64(3), o.Next())
	require.NoError(t, o.Wait(context.Background(), 3))
	o.Done(1) // settled twice: harmless
	require.Equal(t, uint64(3), o.Next())
}
