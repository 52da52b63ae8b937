package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tasks"
)

// hugeTaskLists is what the service returns for a list whose task has a
// subject and a description of size bytes.
func hugeTaskLists(size int) ([]api.TaskListDoc, string) {
	big := strings.Repeat("x", size)
	ts := []tasks.Task{{ID: "1", Subject: big, Description: big, Status: tasks.StatusInProgress}, {ID: "2", Subject: "small", Status: tasks.StatusPending}}
	l := tasks.List{ID: "BIG", Tasks: ts, Progress: tasks.ComputeProgress(ts)}
	return []api.TaskListDoc{tasks.Doc(l)}, big
}

// One 3 MB subject used to make every list_tasks reply 6 MB (12.5 s over
// HTTP). The reply is now small whatever the tasks hold.
func TestListTasksCapsHugeTask(t *testing.T) {
	f := fixture(t)
	lists, _ := hugeTaskLists(3 << 20)
	f.SetTaskLists(lists)
	c := inProcess(t, newServer(t, f, Options{}), "cap")
	for _, args := range []map[string]any{{}, {"list": "BIG"}} {
		start := time.Now()
		res, out := call(t, c, "list_tasks", args)
		took := time.Since(start)
		n := len(text(res))
		t.Logf("list_tasks %v: %d bytes in %s", args, n, took.Round(time.Millisecond))
		if res.IsError || n > 16<<10 {
			t.Fatalf("list_tasks %v replied %d bytes", args, n)
		}
		task := out["lists"].([]any)[0].(map[string]any)["tasks"].([]any)[0].(map[string]any)
		if !strings.HasSuffix(task["subject"].(string), " chars)") || task["truncated"] != true {
			t.Fatalf("the cut subject has no marker: %.80v", task)
		}
	}
}

// Whoever asks for one task gets it whole.
func TestListTasksOneTaskWhole(t *testing.T) {
	f := fixture(t)
	// Big enough to be cut in lists, small enough to pass quickly under -race.
	lists, big := hugeTaskLists(200 << 10)
	full := []api.TaskDoc{{ID: "1", Subject: big, Description: big, Status: "in_progress"}}
	lists[0].Tasks = full // the fake returns tasks as set: Task reads them whole
	f.SetTaskLists(lists)
	c := inProcess(t, newServer(t, f, Options{}), "whole")
	res, out := call(t, c, "list_tasks", map[string]any{"list": "BIG", "task": "1"})
	if res.IsError {
		t.Fatal(text(res))
	}
	task := out["task"].(map[string]any)
	if task["subject"] != big || task["description"] != big {
		t.Fatalf("task not whole: subject %d bytes", len(task["subject"].(string)))
	}
	for args, want := range map[*map[string]any]string{
		{"task": "1"}:                "task needs list",
		{"list": "BIG", "task": "9"}: "no such task",
	} {
		if res, _ := call(t, c, "list_tasks", *args); !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("list_tasks %v = %s, want a tool error with %q", *args, text(res), want)
		}
	}
}
