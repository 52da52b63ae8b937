package monitor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tasks"
)

// TestTaskProgressFollowsTheList: a session's task progress follows its
// list's changes without its pane being captured again (an idle agent
// prints nothing after writing its last task).
func TestTaskProgressFollowsTheList(t *testing.T) {
	var mu sync.Mutex
	progress := api.TaskProgress{Completed: 0, Total: 2, InProgress: []string{}}
	h := newHarness(t, func(c *Config) {
		c.TaskProgress = func(id string) (api.TaskProgress, bool) {
			mu.Lock()
			defer mu.Unlock()
			return progress, id == "PRD-X"
		}
	})
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	ctx := context.Background()
	if _, err := h.sup.Link(ctx, api.LinkRequest{Target: api.Target{Pane: "%1"}, TaskList: "PRD-X"}); err != nil {
		t.Fatal(err)
	}
	if s := h.session("%1"); s.TaskList != "PRD-X" || s.Tasks == nil || s.Tasks.Total != 2 {
		t.Fatalf("after the link: %+v (tasks %+v)", s, s.Tasks)
	}

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	updates, err := h.sup.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan tasks.Event, 2)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.sup.FollowTasks(fctx, events) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("FollowTasks: %v", err)
		}
	}()

	// Another list's change leaves the session alone; its own list's
	// change is published, with no capture in between.
	events <- tasks.Event{Kind: tasks.EventTaskCreated, ListID: "PRD-OTHER"}
	mu.Lock()
	progress = api.TaskProgress{Completed: 1, Total: 3, InProgress: []string{"Write docs"}}
	mu.Unlock()
	events <- tasks.Event{Kind: tasks.EventTaskCreated, ListID: "PRD-X"}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case u := <-updates:
			if u.Kind != api.SessionChanged || u.Session.Pane != "%1" {
				continue
			}
			if tp := u.Session.Tasks; tp == nil || tp.Total != 3 || tp.Completed != 1 || len(tp.InProgress) != 1 {
				t.Fatalf("published tasks %+v", u.Session.Tasks)
			}
			if s := h.session("%1"); s.Tasks.Total != 3 {
				t.Fatalf("snapshot tasks %+v", s.Tasks)
			}
			return
		case <-deadline:
			t.Fatal("no update after the list changed")
		}
	}
}
