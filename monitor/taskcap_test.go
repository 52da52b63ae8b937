package monitor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tasks"
)

// The service caps task texts in lists and gives one task whole.
func TestServiceTaskListsCapAndTaskIsWhole(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	ts := []tasks.Task{{ID: "1", Subject: big, Description: big, Status: tasks.StatusInProgress}}
	lists := []tasks.List{{ID: "L", Tasks: ts, Progress: tasks.ComputeProgress(ts)}}
	h := newHarness(t, func(c *Config) { c.TaskLists = func() []tasks.List { return lists } })
	ctx := context.Background()
	got, err := h.sup.TaskLists(ctx, "")
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	if s := got[0].Tasks[0].Subject; len(s) > tasks.MaxSubject+30 || !got[0].Tasks[0].Truncated {
		t.Fatalf("TaskLists subject is %d bytes", len(s))
	}
	if s := got[0].Progress.InProgress[0].Subject; len(s) > tasks.MaxSubject+30 {
		t.Fatalf("progress subject is %d bytes", len(s))
	}
	one, err := h.sup.Task(ctx, api.TaskRequest{List: "L", Task: "1"})
	if err != nil || one.Subject != big || one.Description != big {
		t.Fatalf("Task = %d bytes, %v; want the task whole", len(one.Subject), err)
	}
	if _, err := h.sup.Task(ctx, api.TaskRequest{List: "L", Task: "2"}); !errors.Is(err, api.ErrUnknownTask) {
		t.Fatalf("unknown task: %v", err)
	}
	if _, err := h.sup.Task(ctx, api.TaskRequest{List: "M", Task: "1"}); !errors.Is(err, api.ErrUnknownList) {
		t.Fatalf("unknown list: %v", err)
	}
}
