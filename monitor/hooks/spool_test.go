package hooks

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

func TestSpoolManyWriters(t *testing.T) {
	sp := Spool{Path: filepath.Join(t.TempDir(), SpoolFile)}
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := sp.Append(api.HookEvent{Name: api.PreToolUse, Pane: fmt.Sprintf("%%%d", w), ToolInput: fmt.Sprint(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs, skipped, err := sp.Drain()
	if err != nil || skipped != 0 || len(evs) != writers*each {
		t.Fatalf("drained %d events, %d skipped, %v", len(evs), skipped, err)
	}
	// Each writer's events stay in its order.
	next := map[string]int{}
	for _, ev := range evs {
		if ev.ToolInput != fmt.Sprint(next[ev.Pane]) {
			t.Fatalf("pane %s: event %s after %d", ev.Pane, ev.ToolInput, next[ev.Pane])
		}
		next[ev.Pane]++
	}
	if evs, _, _ := sp.Drain(); len(evs) != 0 {
		t.Fatalf("drained twice: %d", len(evs))
	}
}

func TestSpoolTornTail(t *testing.T) {
	sp := Spool{Path: filepath.Join(t.TempDir(), SpoolFile)}
	if err := sp.Append(api.HookEvent{Name: api.Stop, Received: time.Unix(1, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	// A writer killed mid-line, then garbage, then a good event.
	f, _ := os.OpenFile(sp.Path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"hook_event_name":"PreTo`)
	f.Close()
	if err := sp.Append(api.HookEvent{Name: api.StopFailure, Error: "rate_limit"}); err != nil {
		t.Fatal(err)
	}
	evs, skipped, err := sp.Drain()
	if err != nil || skipped != 1 || len(evs) != 2 || evs[0].Name != api.Stop || evs[1].Name != api.StopFailure {
		t.Fatalf("drained %+v, %d skipped, %v", evs, skipped, err)
	}
}

func TestSpoolBounded(t *testing.T) {
	sp := Spool{Path: filepath.Join(t.TempDir(), SpoolFile), Max: 400}
	var n int
	var err error
	for n = 0; n < 100; n++ {
		if err = sp.Append(api.HookEvent{Name: api.PreToolUse, ToolInput: "some command"}); err != nil {
			break
		}
	}
	if n == 0 || n == 100 || err == nil {
		t.Fatalf("appended %d events, err %v", n, err)
	}
	if fi, _ := os.Stat(sp.Path); fi.Size() > 400 {
		t.Fatalf("spool grew to %d bytes", fi.Size())
	}
	evs, _, _ := sp.Drain()
	if len(evs) != n {
		t.Fatalf("drained %d, appended %d", len(evs), n)
	}
	if err := sp.Append(api.HookEvent{Name: api.Stop}); err != nil {
		t.Fatalf("append after drain: %v", err)
	}
}

func TestSpoolMissingIsEmpty(t *testing.T) {
	evs, skipped, err := Spool{Path: filepath.Join(t.TempDir(), "none")}.Drain()
	if err != nil || skipped != 0 || len(evs) != 0 {
		t.Fatalf("%v %d %v", evs, skipped, err)
	}
}
