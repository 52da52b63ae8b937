package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

func TestToolCallsFromRealTranscript(t *testing.T) {
	tail := &transcriptTail{path: filepath.Join("testdata", "captures", "claude", "transcript_tool_errors.jsonl")}
	if err := tail.poll(); err != nil {
		t.Fatal(err)
	}
	calls := tail.takeCalls()
	if len(calls) != 4 {
		t.Fatalf("%d calls, want the 4 failed ls calls: %+v", len(calls), calls)
	}
	for _, c := range calls {
		if c.Tool != "Bash" || !strings.HasPrefix(c.Command, "ls ") || !c.Failed || !strings.Contains(c.Error, "No such file") || c.Time.IsZero() || c.Source != "transcript" {
			t.Fatalf("call = %+v", c)
		}
	}
	if again := tail.takeCalls(); len(again) != 0 {
		t.Fatalf("calls taken twice: %+v", again)
	}
}

func TestToolCallPairing(t *testing.T) {
	tail := &transcriptTail{}
	lines := []string{
		`{"type":"assistant","timestamp":"2026-11-21T05:40:00Z","message":{"content":[{"type":"tool_use","id":"a","name":"Edit","input":{"file_path":"/src/main.go","old_string":"x","new_string":"y"}},{"type":"tool_use","id":"b","name":"Bash","input":{"command":"gofmt -l ."}}]}}`,
		`{"type":"user","timestamp":"2026-11-21T05:40:01Z","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"ok"}]}}`,
		`{"type":"user","timestamp":"2026-11-21T05:40:02Z","message":{"content":[{"type":"tool_result","tool_use_id":"b","is_error":true,"content":[{"type":"text","text":"main.go"}]}]}}`,
		`{"type":"user","timestamp":"2026-11-21T05:40:03Z","message":{"content":[{"type":"tool_result","tool_use_id":"unknown","content":"ok"}]}}`,
		`{"type":"user","message":{"content":"a prompt"}}`,
	}
	for _, l := range lines {
		tail.toolCalls([]byte(l))
	}
	calls := tail.takeCalls()
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	if c := calls[0]; c.ID != "a" || c.Tool != "Edit" || c.File != "/src/main.go" || c.Failed || c.Error != "" {
		t.Errorf("edit = %+v", c)
	}
	if c := calls[1]; c.Tool != "Bash" || c.Command != "gofmt -l ." || !c.Failed || c.Error != "main.go" || !c.Time.Equal(time.Date(2026, 11, 21, 5, 40, 2, 0, time.UTC)) {
		t.Errorf("bash = %+v", c)
	}
	if len(tail.uses) != 0 {
		t.Errorf("uses left waiting: %v", tail.uses)
	}
}

func TestOnToolCallGetsTranscriptCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	var got []api.ToolCall
	h := newHarness(t, func(c *Config) {
		c.Probe = func(tmux.Pane, *agent.Probe) AgentInfo { return AgentInfo{Transcript: path} }
		c.OnToolCall = func(tc api.ToolCall) { got = append(got, tc) }
	})
	data, err := os.ReadFile(filepath.Join("testdata", "captures", "claude", "transcript_tool_errors.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%1", "claude", "claude/error_tool_failures.txt")
	h.step()
	if len(got) != 4 || got[0].Pane != "%1" || got[0].Agent != "claude" || got[0].Target == "" || got[0].Tool != "Bash" {
		t.Fatalf("calls = %+v", got)
	}
}
