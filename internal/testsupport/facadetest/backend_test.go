package facadetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/lifecycle"
)

// The Backend has every part until With leaves one out, and its fakes are
// what its service calls.
func TestBackendParts(t *testing.T) {
	ctx := context.Background()
	b := NewBackend(t, nil)
	if f, err := b.Features(ctx); err != nil || f != (facade.Features{Orchestrators: true, Finish: true, Learning: true, Coaching: true}) {
		t.Fatalf("features = %+v, %v", f, err)
	}
	if _, err := b.Spawn(ctx, api.SpawnRequest{Initiative: "auth"}); err != nil || len(b.Orchestrators.Spawns()) != 1 {
		t.Fatalf("spawn: %v, recorded %+v", err, b.Orchestrators.Spawns())
	}
	plain := b.With(backend.Parts{Orchestrators: b.Orchestrators.Plain()})
	if _, ok := b.Orchestrators.Plain().(lifecycle.Finisher); ok {
		t.Error("Plain restores and finishes")
	}
	if _, err := plain.Finish(ctx, api.FinishRequest{Name: "auth"}); !errors.Is(err, facade.ErrUnavailable) {
		t.Errorf("finish on plain orchestrators: %v", err)
	}
	if _, err := plain.Learnings(ctx, 5); !errors.Is(err, facade.ErrUnavailable) {
		t.Errorf("learnings left out: %v", err)
	}
	if plain.Fake != b.Fake || plain.Orchestrators != b.Orchestrators {
		t.Error("With changed the fakes")
	}
}

// A stop must be bounded: one without a deadline fails.
func TestStopWantsADeadline(t *testing.T) {
	o := &Orchestrators{}
	if _, err := o.Stop(context.Background(), api.StopRequest{Name: "auth"}); !errors.Is(err, errNoDeadline) {
		t.Errorf("stop without a deadline: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o.SetStop(api.StopResult{Status: "stopped"})
	if res, err := o.Stop(ctx, api.StopRequest{Name: "auth"}); err != nil || res.Status != "stopped" || len(o.Stops()) != 2 {
		t.Errorf("stop = %+v, %v; stops %+v", res, err, o.Stops())
	}
}
