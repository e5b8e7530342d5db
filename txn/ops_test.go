package txn

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"txexec/store"
)

// TestOpKindsCoverStore: every kind of redo op store knows has an entry
// in opKinds, which can apply it, and opKinds has no entry store does not
// know.
func TestOpKindsCoverStore(t *testing.T) {
	for _, k := range store.OpKinds {
		e, ok := opKinds[k]
		if assert.True(t, ok, "redo op kind %q has no entry in opKinds", k) {
			assert.NotNil(t, e.apply, "redo op kind %q cannot be applied", k)
		}
	}
	assert.Len(t, opKinds, len(store.OpKinds), "opKinds has kinds store.OpKinds does not list")
}
