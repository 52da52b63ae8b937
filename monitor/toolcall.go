package monitor

import (
	"encoding/json"

	"github.com/system3-dev/system3/internal/api"
)

// Bounds on pairing tool uses with their results in a transcript: uses
// waiting for a result, and calls handed on per poll (a first read of a
// long transcript hands on only its most recent calls).
const (
	maxPendingUses  = 64
	maxCallsPerPoll = 64
)

// toolUse is a tool_use block waiting for its result.
type toolUse struct {
	name, command, file string
}

type toolBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

type toolInput struct {
	Command      string `json:"command"`
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
}

// toolCalls pairs the tool uses of assistant lines with the results of
// user lines: a result whose use it saw makes one call.
func (t *transcriptTail) toolCalls(line []byte) {
	var l transcriptLine
	if json.Unmarshal(line, &l) != nil || len(l.Message.Content) == 0 || l.Message.Content[0] != '[' {
		return
	}
	var blocks []toolBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		switch {
		case l.Type == "assistant" && b.Type == "tool_use" && b.ID != "":
			var in toolInput
			_ = json.Unmarshal(b.Input, &in)
			file := in.FilePath
			if file == "" {
				file = in.NotebookPath
			}
			if file == "" && b.Name != "Grep" && b.Name != "Glob" {
				file = in.Path
			}
			if t.uses == nil {
				t.uses = map[string]toolUse{}
			}
			if len(t.uses) >= maxPendingUses {
				clear(t.uses) // results that never came; start over
			}
			t.uses[b.ID] = toolUse{name: b.Name, command: in.Command, file: file}
		case l.Type == "user" && b.Type == "tool_result":
			u, ok := t.uses[b.ToolUseID]
			if !ok {
				continue
			}
			delete(t.uses, b.ToolUseID)
			c := api.ToolCall{ID: b.ToolUseID, Time: l.Timestamp, Tool: u.name, Command: u.command, File: u.file, Failed: b.IsError, Source: "transcript"}
			if b.IsError {
				c.Error = blockText(b.Content)
			}
			t.calls = append(t.calls, c)
		}
	}
	if n := len(t.calls); n > maxCallsPerPoll {
		t.calls = append([]api.ToolCall(nil), t.calls[n-maxCallsPerPoll:]...)
	}
}

// takeCalls returns the calls completed since the last take.
func (t *transcriptTail) takeCalls() []api.ToolCall {
	c := t.calls
	t.calls = nil
	return c
}
