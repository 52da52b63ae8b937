package hooks

import "time"

// ToolCall is one finished tool call as PostToolUse and PostToolUseFailure
// report it: what a coaching engine observes.
type ToolCall struct {
	// ID is the call's tool_use id.
	ID        string    `json:"id,omitempty"`
	Pane      string    `json:"pane,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	Tool      string    `json:"tool"`
	Input     string    `json:"input,omitempty"`    // summary: the command, the file, ...
	Response  string    `json:"response,omitempty"` // summary of the output, when it succeeded
	Failed    bool      `json:"failed"`
	Error     string    `json:"error,omitempty"` // the error text, when it failed
	At        time.Time `json:"at"`
}

// ToolCall returns the tool call a PostToolUse or PostToolUseFailure event
// reports, and false for any other event.
func (e Event) ToolCall() (ToolCall, bool) {
	if e.Name != PostToolUse && e.Name != PostToolUseFailure {
		return ToolCall{}, false
	}
	tc := ToolCall{ID: e.ToolUseID, Pane: e.Pane, SessionID: e.SessionID, Tool: e.ToolName, Input: e.ToolInput, At: e.Received}
	if e.Name == PostToolUseFailure {
		tc.Failed, tc.Error = true, e.Error
	} else {
		tc.Response = e.ToolResponse
	}
	return tc, true
}
