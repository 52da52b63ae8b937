package tasks

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (rerun with -update if the change is intended)\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

// loadFixtureTree loads testdata/tree with fixed times and paths shown
// relative to the copy, as $TREE.
func loadFixtureTree(t *testing.T) []List {
	t.Helper()
	dir := copyTree(t, "tree")
	lists, err := Load(filepath.Join(dir, "tasks"), filepath.Join(dir, "todos"))
	if err != nil {
		t.Fatal(err)
	}
	rel := func(p string) string { return strings.Replace(p, dir, "$TREE", 1) }
	for i := range lists {
		l := &lists[i]
		l.Path = rel(l.Path)
		for j := range l.Tasks {
			l.Tasks[j].Source = rel(l.Tasks[j].Source)
		}
		for j := range l.Errors {
			l.Errors[j].Path = rel(l.Errors[j].Path)
		}
	}
	return lists
}

func TestWriteTextGolden(t *testing.T) {
	lists := loadFixtureTree(t)
	now := fixtureTime.Add(2 * time.Hour)
	var b bytes.Buffer
	if err := WriteText(&b, lists, now); err != nil {
		t.Fatal(err)
	}
	golden(t, "text.golden", b.Bytes())
}

func TestWriteJSONGolden(t *testing.T) {
	lists := loadFixtureTree(t)
	var b bytes.Buffer
	if err := WriteJSON(&b, lists); err != nil {
		t.Fatal(err)
	}
	golden(t, "json.golden", b.Bytes())

	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if doc["schema"] != Schema {
		t.Errorf("schema = %v", doc["schema"])
	}
}

func TestWriteJSONEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "{\n  \"schema\": \"system3.tasks/v1\",\n  \"lists\": []\n}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A bare list: every array is [] and every object {}.
	b.Reset()
	if err := WriteJSON(&b, []List{{ID: "x", Tasks: []Task{{ID: "1", Status: StatusPending}}}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "null"); n != 2 {
		t.Errorf("%d nulls, want 2 (only the unknown last_change and modified times):\n%s", n, b.String())
	}
	for _, want := range []string{`"blocks": []`, `"blocked_by": []`, `"metadata": {}`, `"extra": {}`, `"errors": []`, `"in_progress": []`, `"blocked": []`, `"last_change": null`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, b.String())
		}
	}
}

func TestWriteTextEdgeCases(t *testing.T) {
	now := fixtureTime
	lists := []List{
		{ID: "evil\x1b[2J", Tasks: []Task{{ID: "1", Subject: "line\nbreak \u202egnp.exe", Status: StatusPending}}, LastChange: now.Add(-3 * 24 * time.Hour)},
		{ID: "todo-a", Legacy: true},
		{ID: "todo-b", Legacy: true},
	}
	lists[0].Progress = ComputeProgress(lists[0].Tasks)
	var b bytes.Buffer
	if err := WriteText(&b, lists, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`evil\x1b[2J`, `line break \u202egnp.exe`, "changed 3d ago", "(2 empty legacy todo lists not shown)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\u202e") {
		t.Errorf("raw control characters reached the output:\n%q", out)
	}

	// One list asked for by id is shown even when it is an empty legacy one.
	b.Reset()
	if err := WriteText(&b, lists[1:2], now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "todo-a (legacy todos)  0/0 [----------]") || !strings.Contains(b.String(), "(no tasks)") {
		t.Errorf("single empty legacy list:\n%s", b.String())
	}

	b.Reset()
	if err := WriteText(&b, nil, now); err != nil || b.Len() != 0 {
		t.Errorf("no lists: wrote %q, %v", b.String(), err)
	}
}

func TestAgo(t *testing.T) {
	now := fixtureTime
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Minute, "just now"}, {0, "just now"}, {30 * time.Second, "30s ago"}, {90 * time.Second, "1m ago"},
		{59 * time.Minute, "59m ago"}, {5 * time.Hour, "5h ago"}, {47 * time.Hour, "47h ago"}, {72 * time.Hour, "3d ago"},
	} {
		if got := ago(now, now.Add(-tt.d)); got != tt.want {
			t.Errorf("ago(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := ago(now, time.Time{}); got != "never" {
		t.Errorf("ago(zero) = %q", got)
	}
}
