package monitor

import (
	"context"
	"testing"
)

// Problems other parts of the process report (notification deliveries)
// show in the snapshot, beside the monitor's own, until they clear.
func TestSetProblemShowsInSnapshot(t *testing.T) {
	h := newHarness(t, nil)
	problem := func() string {
		snap, err := h.sup.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return snap.Problem
	}
	if p := problem(); p != "" {
		t.Fatalf("problem = %q", p)
	}
	h.sup.SetProblem("notify", "notifications: ntfy delivery failing")
	h.sup.SetProblem("a-other", "other trouble")
	if p := problem(); p != "other trouble; notifications: ntfy delivery failing" {
		t.Fatalf("problem = %q", p)
	}
	h.sup.SetProblem("notify", "")
	h.sup.SetProblem("a-other", "")
	if p := problem(); p != "" {
		t.Fatalf("problem after clearing = %q", p)
	}
}
