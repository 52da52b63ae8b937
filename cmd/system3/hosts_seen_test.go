package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/remote"
)

// TestRecordSeenFromManyWriters: processes recording what they learnt of
// their hosts at the same time lose nothing, and an older time never
// replaces a newer one.
func TestRecordSeenFromManyWriters(t *testing.T) {
	dir := t.TempDir()
	newApp := func() *app {
		a := &app{App: core.App{Log: slog.New(slog.DiscardHandler)}}
		a.Settings.StateDir = dir
		return a
	}
	// A process that saw host0 before the others did.
	stale := remote.NewLink(remote.Host{Name: "host0", SSH: "nowhere.invalid"})
	defer stale.Close()
	stale.Observe(context.Background(), nil)
	time.Sleep(10 * time.Millisecond) // the others' times are later
	const writers, rounds = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := newApp()
			l := remote.NewLink(remote.Host{Name: fmt.Sprintf("host%d", w), SSH: "nowhere.invalid"})
			defer l.Close()
			for range rounds {
				l.Observe(context.Background(), nil) // it answered
				a.RecordSeen([]*remote.Link{l})
			}
		}()
	}
	wg.Wait()
	seen := newApp().LoadSeen()
	for w := range writers {
		if s, ok := seen[fmt.Sprintf("host%d", w)]; !ok || s.LastSeen.IsZero() {
			t.Errorf("host%d was lost: %+v", w, seen)
		}
	}
	// The process that saw host0 earlier records it last: the later
	// time stays.
	latest := seen["host0"].LastSeen
	newApp().RecordSeen([]*remote.Link{stale})
	if got := newApp().LoadSeen()["host0"].LastSeen; !got.Equal(latest) {
		t.Errorf("host0 last seen %v, want %v kept", got, latest)
	}
	if time.Since(latest) > time.Minute {
		t.Errorf("last seen %v is not this run's", latest)
	}
}
