package core

import (
	"slices"
	"testing"

	"github.com/system3-dev/system3/tasks"
)

func TestProgressOf(t *testing.T) {
	l := tasks.List{Progress: tasks.Progress{Completed: 1, Total: 4,
		InProgress: []tasks.TaskRef{{ID: "2", Subject: "Add cookies"}},
		Blocked:    []tasks.TaskRef{{ID: "3"}, {ID: "4"}}}}
	p := progressOf(l)
	if p.Completed != 1 || p.Total != 4 || p.Blocked != 2 || !slices.Equal(p.InProgress, []string{"Add cookies"}) {
		t.Fatalf("progress = %+v", p)
	}
	if p := progressOf(tasks.List{}); p.InProgress == nil {
		t.Fatal("no tasks in progress is an empty list, not null, in JSON")
	}
}
