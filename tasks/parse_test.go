package tasks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseTask(t *testing.T) {
	tests := []struct {
		file      string
		err       string // substring of the error; "" means no error
		id        string
		subject   string
		status    Status
		blocks    []string
		blockedBy []string
		problems  []string // substrings, in order
		extra     []string // keys of Task.Extra
		check     func(t *testing.T, task Task)
	}{
		{file: "basic.json", id: "1", subject: "Implement login form", status: StatusPending,
			check: func(t *testing.T, task Task) {
				if task.Description != "Build the login form with validation" || task.ActiveForm != "Implementing login form" {
					t.Errorf("description/activeForm = %q/%q", task.Description, task.ActiveForm)
				}
				if task.Blocks == nil || task.BlockedBy == nil {
					t.Errorf("empty arrays should stay empty slices, got %#v %#v", task.Blocks, task.BlockedBy)
				}
			}},
		// Written by Claude Code 2.1 (TaskCreate, then TaskUpdate twice).
		{file: "claude-code-2.1.json", id: "1", subject: "Implement login form", status: StatusCompleted, blocks: []string{"2"}, blockedBy: []string{}},
		{file: "in-progress-owner.json", id: "2", subject: "Write tests", status: StatusInProgress, blockedBy: []string{"1"},
			check: func(t *testing.T, task Task) {
				if task.Owner != "agent-7" {
					t.Errorf("owner = %q", task.Owner)
				}
				if got := task.Metadata["big"]; got != json.Number("12345678901234567890") {
					t.Errorf("metadata big = %#v, want the exact json.Number", got)
				}
				if tags, _ := task.Metadata["tags"].([]any); len(tags) != 2 {
					t.Errorf("metadata tags = %#v", task.Metadata["tags"])
				}
			}},
		{file: "numeric-id.json", id: "5", subject: "Numeric id", status: StatusCompleted, blocks: []string{"6", "7"}, blockedBy: []string{"4"}},
		{file: "blocks-string.json", id: "8", status: StatusPending, blockedBy: []string{"3"},
			problems: []string{`field "blocks" is a string, want an array of task ids`, `field "blockedBy" holds a boolean where a task id belongs`}},
		{file: "unknown-status.json", id: "9", status: "done", problems: []string{`unknown status "done"`}},
		{file: "unknown-fields.json", id: "10", status: StatusPending, extra: []string{"createdAt", "hooks", "priority"}},
		{file: "missing-id.json", id: "fallback", subject: "No id here", status: StatusPending},
		{file: "id-wrong-type.json", id: "fallback", status: StatusPending, problems: []string{`field "id" is an object, want a string or a number; the file name is used`}},
		{file: "missing-status.json", id: "11", status: StatusPending, problems: []string{`field "status" is missing; the task is shown as pending`}},
		{file: "wrong-types.json", id: "12", status: StatusPending, problems: []string{
			`field "subject" is a number, want a string`,
			`field "description" is an array, want a string`,
			`field "owner" is a boolean, want a string`,
			`field "metadata" is a string, want an object`,
		}},
		{file: "truncated.json", err: "not valid JSON (unexpected end of JSON input"},
		{file: "empty.json", err: "the file is empty"},
		{file: "whitespace.json", err: "the file is empty"},
		{file: "array.json", err: "holds an array, not a task object"},
		{file: "null.json", err: "holds null, not a task object"},
		{file: "string.json", err: "holds a string, not a task object"},
		{file: "non-utf8.json", err: "not valid UTF-8 text (bad byte at offset 28)"},
		{file: "bom.json", id: "15", subject: "Has a BOM", status: StatusPending},
		{file: "trailing-garbage.json", err: "not valid JSON (invalid character '}' after top-level value"},
		{file: "unicode.json", id: "17", subject: "Übersetzung 翻訳 ✓", status: StatusPending},
		{file: "control-chars.json", id: "18", subject: "Clear \x1b[2J screen\nnext line \u202eevil", status: StatusPending},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			task, problems, err := ParseTask(readFixture(t, "parse/"+tt.file), "fallback")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if task.ID != tt.id || task.Status != tt.status {
				t.Errorf("id, status = %q, %q; want %q, %q", task.ID, task.Status, tt.id, tt.status)
			}
			if tt.subject != "" && task.Subject != tt.subject {
				t.Errorf("subject = %q, want %q", task.Subject, tt.subject)
			}
			if tt.blocks != nil && !slices.Equal(task.Blocks, tt.blocks) {
				t.Errorf("blocks = %q, want %q", task.Blocks, tt.blocks)
			}
			if tt.blockedBy != nil && !slices.Equal(task.BlockedBy, tt.blockedBy) {
				t.Errorf("blockedBy = %q, want %q", task.BlockedBy, tt.blockedBy)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("problems = %q, want %d matching %q", problems, len(tt.problems), tt.problems)
			}
			for i, want := range tt.problems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], want)
				}
			}
			var extra []string
			for k := range task.Extra {
				extra = append(extra, k)
			}
			slices.Sort(extra)
			if !slices.Equal(extra, tt.extra) {
				t.Errorf("extra keys = %q, want %q", extra, tt.extra)
			}
			if tt.check != nil {
				tt.check(t, task)
			}
		})
	}
}

func TestParseTaskNoFallback(t *testing.T) {
	_, _, err := ParseTask([]byte(`{"subject": "x", "status": "pending"}`), "")
	if err == nil || !strings.Contains(err.Error(), "no id") {
		t.Fatalf("err = %v, want a missing-id error", err)
	}
}

func TestParseTodos(t *testing.T) {
	tests := []struct {
		file     string
		err      string
		ids      []string
		subjects []string
		statuses []Status
		problems []string
	}{
		{file: "basic.json", ids: []string{"1", "2", "3"},
			subjects: []string{"Read the spec", "Write the parser", "Ship it"},
			statuses: []Status{StatusCompleted, StatusInProgress, StatusPending}},
		{file: "empty.json", ids: []string{}},
		{file: "old-format.json", ids: []string{"1"}, subjects: []string{"Old style todo"}},
		{file: "bad-item.json", ids: []string{"1", "3"}, statuses: []Status{StatusPending, "weird"},
			problems: []string{"item 2 is a string, not a todo object", `item 3: field "content" is a number`, `item 3: unknown status "weird"`}},
		{file: "object.json", err: "holds an object, not a todo array"},
		{file: "truncated.json", err: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			todos, problems, err := ParseTodos(readFixture(t, "legacy/"+tt.file))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids, subjects []string
			var statuses []Status
			for _, td := range todos {
				ids = append(ids, td.ID)
				subjects = append(subjects, td.Subject)
				statuses = append(statuses, td.Status)
			}
			if !slices.Equal(ids, tt.ids) && len(ids)+len(tt.ids) > 0 {
				t.Errorf("ids = %q, want %q", ids, tt.ids)
			}
			if tt.subjects != nil && !slices.Equal(subjects, tt.subjects) {
				t.Errorf("subjects = %q, want %q", subjects, tt.subjects)
			}
			if tt.statuses != nil && !slices.Equal(statuses, tt.statuses) {
				t.Errorf("statuses = %q, want %q", statuses, tt.statuses)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("problems = %q, want %q", problems, tt.problems)
			}
			for i, want := range tt.problems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], want)
				}
			}
		})
	}
	t.Run("old fields kept", func(t *testing.T) {
		todos, _, _ := ParseTodos(readFixture(t, "legacy/old-format.json"))
		if string(todos[0].Extra["priority"]) != `"high"` {
			t.Errorf("extra = %q", todos[0].Extra)
		}
	})
}

func TestCompareIDs(t *testing.T) {
	ids := []string{"b", "10", "2", "a", "1", "002", "01", "x10", "100"}
	slices.SortFunc(ids, compareIDs)
	want := []string{"01", "1", "002", "2", "10", "100", "a", "b", "x10"}
	if !slices.Equal(ids, want) {
		t.Errorf("sorted = %q, want %q", ids, want)
	}
}
