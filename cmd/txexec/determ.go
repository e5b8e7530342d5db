package main

import (
	"time"

	"txexec/determ"
	"txexec/vfs"
)

// determinize makes the deterministic environment of one attempt of a
// --deterministic run and gives the transaction's view its clock, sorted
// host listings, stamped file times and virtual inode numbers.
func determinize(view *vfs.Tx, seed uint64) *determ.Env {
	env := determ.New(seed)
	view.Now = func() time.Time { return determ.Wall(env.Now()) }
	view.SortedListings = true
	view.StampTimes = true
	view.VirtualInodes = true
	return env
}
