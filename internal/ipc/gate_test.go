package ipc

import (
	"slices"
	"testing"
)

// TestEveryWriteIsBoundToItsPeer: every method that changes something
// (an action or a repeatable change) takes the origin the service records
// and its policy judges from the process that connected, never from what
// the client says: a write added to the table without withPeer fails
// here, so forgetting it is not possible.
func TestEveryWriteIsBoundToItsPeer(t *testing.T) {
	writes := Writes()
	for _, name := range writes {
		if m := methods[name]; m.peer == nil {
			t.Errorf("method %q changes something (kind %d) but does not take its origin from the peer (withPeer)", name, m.kind)
		}
	}
	// The check must see the writes: a table that lost its kinds would
	// pass it vacuously.
	for _, w := range []string{"inject", "answer", "ack", "spawn", "delete_learnings", "remind"} {
		if _, ok := slices.BinarySearch(writes, w); !ok {
			t.Errorf("%q is not among the writes %q", w, writes)
		}
	}
}
