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

func TestParseRealTranscript(t *testing.T) {
	tail := &transcriptTail{path: filepath.Join("testdata", "captures", "claude", "transcript_tool_errors.jsonl")}
	if err := tail.poll(); err != nil {
		t.Fatal(err)
	}
	if len(tail.results) != 4 {
		t.Fatalf("%d tool results, want the 4 failed ls calls: %+v", len(tail.results), tail.results)
	}
	for _, r := range tail.results {
		if !r.Failed || !strings.Contains(r.Text, "No such file or directory") || r.Time.IsZero() {
			t.Fatalf("result = %+v", r)
		}
	}
	last := tail.results[3].Time
	if text, ok := tail.failingRun(3, 10*time.Minute, last.Add(time.Minute)); !ok || !strings.Contains(text, "missing-dir") {
		t.Fatalf("failingRun = %q, %v", text, ok)
	}
	if _, ok := tail.failingRun(3, 10*time.Minute, last.Add(time.Hour)); ok {
		t.Fatal("failures an hour old still count as a loop")
	}
	if _, ok := tail.failingRun(5, 10*time.Minute, last); ok {
		t.Fatal("4 failures make a run of 5")
	}
}

func TestParseTranscriptLine(t *testing.T) {
	tests := []struct {
		name, line string
		want       []toolResult
	}{
		{"failed, string content", `{"type":"user","timestamp":"2026-11-21T05:40:09Z","message":{"content":[{"type":"tool_result","is_error":true,"content":"boom"}]}}`,
			[]toolResult{{Failed: true, Text: "boom"}}},
		{"failed, text blocks", `{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}]}}`,
			[]toolResult{{Failed: true, Text: "a\nb"}}},
		{"succeeded", `{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}`, []toolResult{{}}},
		{"a prompt", `{"type":"user","message":{"content":"hello"}}`, nil},
		// As Claude Code 2.1.329 writes a turn that ended on an API error.
		{"API error", `{"type":"assistant","isApiErrorMessage":true,"apiErrorStatus":529,"apiErrorType":"overloaded_error","error":"server_error","message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: Repeated 529 Overloaded errors. The API is at capacity"}]}}`,
			[]toolResult{{Failed: true, Text: "API Error: Repeated 529 Overloaded errors. The API is at capacity"}}},
		{"assistant text", `{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: quoted in a normal answer"}]}}`, nil},
		{"assistant", `{"type":"assistant","message":{"content":[{"type":"tool_use"}]}}`, nil},
		{"garbage", `{"type":"user","message":`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseTranscriptLine([]byte(tt.line))
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i].Failed != tt.want[i].Failed || got[i].Text != tt.want[i].Text {
					t.Fatalf("got %+v, want %+v", got[i], tt.want[i])
				}
			}
		})
	}
}

func TestTranscriptTailReadsAppendsAndPartialLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	fail := `{"type":"user","timestamp":"2026-11-21T09:00:00Z","message":{"content":[{"type":"tool_result","is_error":true,"content":"exit 1: /tmp/a missing"}]}}` + "\n"
	ok := `{"type":"user","timestamp":"2026-11-21T09:00:01Z","message":{"content":[{"type":"tool_result","content":"fine"}]}}` + "\n"
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	tail := &transcriptTail{path: path}
	write(fail + fail[:40])
	if err := tail.poll(); err != nil || len(tail.results) != 1 {
		t.Fatalf("after one line and a half: %d results, err %v", len(tail.results), err)
	}
	write(fail[40:] + fail)
	if err := tail.poll(); err != nil || len(tail.results) != 3 {
		t.Fatalf("after completing the line: %d results, err %v", len(tail.results), err)
	}
	now := time.Date(2026, 11, 21, 9, 1, 0, 0, time.UTC)
	if _, loop := tail.failingRun(3, 10*time.Minute, now); !loop {
		t.Fatal("three failures are not a loop")
	}
	write(ok)
	tail.poll()
	if _, loop := tail.failingRun(3, 10*time.Minute, now); loop {
		t.Fatal("a success after the failures still counts as a loop")
	}
	// Rewritten shorter: read again from the start.
	if err := os.WriteFile(path, []byte(fail), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tail.poll(); err != nil || len(tail.results) != 1 {
		t.Fatalf("after a rewrite: %d results, err %v", len(tail.results), err)
	}
}

func TestTranscriptLoopBecomesErrorLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	h := newHarness(t, func(c *Config) {
		c.Probe = func(tmux.Pane, *agent.Probe) AgentInfo { return AgentInfo{Transcript: path} }
	})
	h.clock.now = time.Date(2026, 11, 21, 5, 41, 0, 0, time.UTC) // a minute after the fixture's failures
	data, err := os.ReadFile(filepath.Join("testdata", "captures", "claude", "transcript_tool_errors.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%1", "claude", "claude/error_tool_failures.txt")
	h.step()
	s := h.session("%1")
	if s.State != api.ErrorLoop || s.Evidence.Source != "transcript" || !strings.Contains(s.Evidence.Lines[0], "missing-dir") {
		t.Fatalf("session = %+v", s)
	}
	if w := h.unacked(api.ReasonErrorLoopDetected); len(w) != 1 || w[0].Evidence.Rule != "monitor.failing_tools" {
		t.Fatalf("wakes = %+v", w)
	}
	// A prompt on screen outranks the loop: the person must answer it.
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.step()
	if s := h.session("%1"); s.State != api.AwaitingInput {
		t.Fatalf("state = %s, want awaiting_input", s.State)
	}
}

func TestTaskListLinkedFromTheProcess(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Probe = func(tmux.Pane, *agent.Probe) AgentInfo { return AgentInfo{TaskList: "PRD-AUTH"} }
		c.TaskProgress = func(id string) (api.TaskProgress, bool) {
			if id != "PRD-AUTH" {
				return api.TaskProgress{}, false
			}
			return api.TaskProgress{Completed: 1, Total: 3, InProgress: []string{"Add session cookies"}}, true
		}
	})
	h.tm.show(t, "%1", "claude", "claude/permission_bash_tasks.txt")
	h.step()
	s := h.session("%1")
	if s.TaskList != "PRD-AUTH" || s.Tasks == nil || s.Tasks.Total != 3 || s.State != api.AwaitingInput {
		t.Fatalf("session = %+v", s)
	}
	w := h.unacked(api.ReasonAwaitingInput)
	if len(w) != 1 || w[0].Tasks == nil || w[0].Tasks.ListID != "PRD-AUTH" || w[0].Tasks.Completed != 1 || w[0].Tasks.InProgress[0] != "Add session cookies" {
		t.Fatalf("wake = %+v", w)
	}
}
