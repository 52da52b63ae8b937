package api

import (
	"context"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := Backoff{First: time.Second, Max: 30 * time.Second}
	var got []time.Duration
	for range 8 {
		got = append(got, b.Next())
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v, want %v seconds", got, want)
		}
	}
	if b.Failed() != 8 {
		t.Errorf("Failed() = %d after 8 failures", b.Failed())
	}
	b.Reset()
	if d := b.Next(); d != time.Second || b.Failed() != 1 {
		t.Errorf("after Reset: %v, %d failed", d, b.Failed())
	}
	// Many failures never overflow into a short or negative delay.
	for range 100 {
		b.Next()
	}
	if d := b.Next(); d != 30*time.Second {
		t.Errorf("after 100 failures: %v", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := Backoff{First: time.Hour, Max: time.Hour}
	if slow.Wait(ctx) {
		t.Error("Wait returned true for an ended context")
	}
	if !(&Backoff{First: time.Millisecond, Max: time.Millisecond}).Wait(context.Background()) {
		t.Error("Wait returned false for a live context")
	}
}
