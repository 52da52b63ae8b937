package mcpserver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/backend"
)

// TestToolSchemas compares every tool's definition (description, input
// schema, annotations) with its snapshot in testdata/tools; -update
// rewrites them. A change to what clients see must be deliberate.
func TestToolSchemas(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{}, backend.Parts{Learn: learnStore(t), Coach: coachFixture(t, f)})
	dir := filepath.Join("testdata", "tools")
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{}
	for _, d := range s.AllTools() {
		name := d.Tool.Name + ".json"
		want[name] = true
		// The registered tool is what clients see (with the server's
		// strict additionalProperties default applied).
		reg := s.MCPServer().GetTool(d.Tool.Name)
		if reg == nil {
			t.Fatalf("tool %s not registered", d.Tool.Name)
		}
		got, err := json.MarshalIndent(reg.Tool, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test ./mcpserver -run TestToolSchemas -update)", path, err)
			continue
		}
		if !bytes.Equal(old, got) {
			t.Errorf("tool %s changed; if that is intended, run go test ./mcpserver -run TestToolSchemas -update\n--- %s\n%s\n--- now\n%s", d.Tool.Name, path, old, got)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		if !want[filepath.Base(f)] {
			t.Errorf("%s describes no tool any more; delete it (or run -update)", f)
		}
	}
}

// TestToolContract checks what no snapshot shows: read tools say so, write
// tools are left out by read-only, every argument is described.
func TestToolContract(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{}, backend.Parts{Learn: learnStore(t), Coach: coachFixture(t, f)})
	names := map[string]bool{}
	for _, d := range s.AllTools() {
		tool := d.Tool
		names[tool.Name] = true
		a := tool.Annotations
		if a.ReadOnlyHint == nil || *a.ReadOnlyHint == d.Write {
			t.Errorf("%s: readOnlyHint %v, write tool %v", tool.Name, a.ReadOnlyHint, d.Write)
		}
		if a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: openWorldHint must be false", tool.Name)
		}
		if a.Title == "" || len(tool.Description) < 100 {
			t.Errorf("%s: needs a title and a description a model can act on", tool.Name)
		}
		if tool.InputSchema.AdditionalProperties != nil {
			t.Errorf("%s: additionalProperties set by hand; the server's strict default applies", tool.Name)
		}
		for _, n := range propertyNames(tool) {
			p, _ := tool.InputSchema.Properties[n].(map[string]any)
			if d, _ := p["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", tool.Name, n)
			}
		}
	}
	for _, want := range []string{"status", "list_sessions", "get_session", "list_wakes", "list_tasks", "wait_for_wake",
		"inject_guidance", "answer_prompt", "interrupt", "ack_wake", "report_outcome", "capability_check", "reflect", "spawn_orchestrator", "stop_orchestrator", "link_task_list", "restore_orchestrators", "finish_orchestrator"} {
		if !names[want] {
			t.Errorf("tool %s missing", want)
		}
	}
	ro := newServer(t, fixture(t), Options{ReadOnly: true}, backend.Parts{Learn: learnStore(t)})
	if got := len(ro.toolSet()); got != 8 {
		t.Errorf("read-only registers %d tools, want the 8 read ones", got)
	}
	if got := len(newServer(t, fixture(t), Options{}).toolSet()); got != 15 {
		t.Errorf("without a learning store %d tools, want 15 (10 + the 5 lifecycle ones)", got)
	}
}

// TestReferenceDoc keeps docs/mcp.md's tool and resource reference in step
// with the definitions; -update rewrites the generated part.
func TestReferenceDoc(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{}, backend.Parts{Learn: learnStore(t), Coach: coachFixture(t, f)})
	path := filepath.Join("..", "docs", "mcp.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), ReferenceBegin)
	_, after, ok2 := strings.Cut(rest, ReferenceEnd)
	if !ok || !ok2 {
		t.Fatalf("%s lacks the markers %q and %q", path, ReferenceBegin, ReferenceEnd)
	}
	want := before + ReferenceBegin + "\n\n" + s.Reference() + "\n" + ReferenceEnd + after
	if want == string(doc) {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: its reference differs from the tool definitions; run go test ./mcpserver -run TestReferenceDoc -update", path)
}
