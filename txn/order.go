package txn

import (
	"context"
	"sync"
)

// CommitOrder makes transactions commit in a given order: the commit of
// sequence number n waits until every number below n has been settled.
// It is TxOS's ordered commit (its server extensions' sequence numbers),
// shared by the in-program API's TX_ORDERED and by `txexec parallel`.
//
// Numbers start at zero and are dense: a holder of number n must settle
// it with Done whether its transaction committed or was given up, or
// every later number waits forever. A transaction that lost a conflict
// and will run again keeps its number and does not call Done.
type CommitOrder struct {
	mu sync.Mutex
	// next is the smallest number not yet settled.
	next uint64
	// done holds settled numbers above next.
	done map[uint64]bool
	// turn is closed, and replaced, whenever next advances.
	turn chan struct{}
}

// Wait returns when every number below seq has been settled, or with
// ctx's error when ctx ends first.
func (o *CommitOrder) Wait(ctx context.Context, seq uint64) error {
	for {
		o.mu.Lock()
		if o.next >= seq {
			o.mu.Unlock()
			return nil
		}
		turn := o.turnLocked()
		o.mu.Unlock()
		select {
		case <-turn:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Done settles seq: its transaction committed, or will never commit.
// Settling a number twice is harmless.
func (o *CommitOrder) Done(seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if seq < o.next {
		return
	}
	if o.done == nil {
		o.done = make(map[uint64]bool)
	}
	o.done[seq] = true
	advanced := false
	for o.done[o.next] {
		delete(o.done, o.next)
		o.next++
		advanced = true
	}
	if advanced && o.turn != nil {
		close(o.turn)
		o.turn = nil
	}
}

// Next is the smallest number not yet settled: the one whose commit may
// go ahead now.
func (o *CommitOrder) Next() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.next
}

func (o *CommitOrder) turnLocked() chan struct{} {
	if o.turn == nil {
		o.turn = make(chan struct{})
	}
	return o.turn
}
