package tasks

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func hugeList() List {
	big := strings.Repeat("é", 3<<20/2) // 3 MB of two-byte runes
	tasks := []Task{
		{ID: "1", Subject: big, Description: big, ActiveForm: big, Status: StatusInProgress, Metadata: map[string]any{"blob": big}, Extra: map[string]json.RawMessage{"x": json.RawMessage(`"` + big + `"`)}},
		{ID: "2", Subject: "short", Description: "fine", Status: StatusPending, BlockedBy: []string{"1"}},
	}
	return List{ID: "L", Tasks: tasks, Progress: ComputeProgress(tasks)}
}

// One 3 MB subject used to reach every surface whole.
func TestHugeTaskTextsAreCapped(t *testing.T) {
	l := hugeList()
	d := Doc(l)
	t1 := d.Tasks[0]
	if !t1.Truncated || d.Tasks[1].Truncated {
		t.Fatalf("truncated = %v, %v; want true, false", t1.Truncated, d.Tasks[1].Truncated)
	}
	want := strings.Repeat("é", MaxSubject) + "… (+1572664 chars)"
	if t1.Subject != want || t1.ActiveForm != want {
		t.Fatalf("subject = %.40q… (%d bytes), want %d characters and the marker", t1.Subject, len(t1.Subject), MaxSubject)
	}
	if n := utf8.RuneCountInString(t1.Description); n > MaxDescription+30 || !strings.HasSuffix(t1.Description, " chars)") {
		t.Fatalf("description has %d characters", n)
	}
	b, _ := json.Marshal(d)
	if len(b) > 32<<10 {
		t.Fatalf("the list's JSON is %d bytes", len(b))
	}
	if s := l.Progress.InProgress[0].Subject; utf8.RuneCountInString(s) > MaxSubject+20 {
		t.Fatalf("progress subject has %d characters", utf8.RuneCountInString(s))
	}
	if s := l.Progress.Blocked; len(s) != 1 || s[0].Subject != "short" {
		t.Fatalf("blocked = %+v", s)
	}
	var text bytes.Buffer
	WriteText(&text, []List{l}, time.Now())
	for _, line := range strings.Split(text.String(), "\n") {
		if utf8.RuneCountInString(line) > 2*MaxSubject+100 {
			t.Fatalf("a text line has %d characters", utf8.RuneCountInString(line))
		}
	}

	// Whoever asks for the one task gets it whole.
	full, ok := TaskFull(l, "1")
	if !ok || full.Subject != l.Tasks[0].Subject || full.Description != l.Tasks[0].Description || full.Truncated ||
		full.Metadata["blob"] != l.Tasks[0].Metadata["blob"] || len(full.Extra["x"]) != len(l.Tasks[0].Extra["x"]) {
		t.Fatal("TaskFull cut the task")
	}
	if _, ok := TaskFull(l, "9"); ok {
		t.Fatal("TaskFull found a task that does not exist")
	}
	if df := DocFull(l); df.Tasks[0].Subject != l.Tasks[0].Subject {
		t.Fatal("DocFull cut the subject")
	}
}

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc… (+1 chars)", true},
		{"日本語です", 2, "日本… (+3 chars)", true},
		{"", 0, "", false},
	} {
		if got, cut := Shorten(tc.in, tc.n); got != tc.want || cut != tc.cut {
			t.Errorf("Shorten(%q, %d) = %q, %v; want %q, %v", tc.in, tc.n, got, cut, tc.want, tc.cut)
		}
	}
}
