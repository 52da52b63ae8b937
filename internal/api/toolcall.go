package api

import (
	"time"
)

// ToolCall is one tool call an agent made and how it ended, as a
// transcript (or a hook) tells it. internal/coach detects behaviour
// patterns in a stream of them.
type ToolCall struct {
	// ID is the call's tool_use id, when known: the same call seen in a
	// transcript and by a hook is counted once.
	ID   string    `json:"id,omitempty"`
	Time time.Time `json:"time"`
	// Pane, Target and Session say where the agent runs; Repo is its
	// working directory; Agent is "claude", "codex"...
	Pane    string `json:"pane"`
	Target  string `json:"target,omitempty"`
	Session string `json:"session,omitempty"`
	Repo    string `json:"repo,omitempty"`
	Agent   string `json:"agent,omitempty"`
	// Tool is the tool's name ("Bash", "Edit"); Command the shell command
	// it ran, File the file it read or wrote, when it has one.
	Tool    string `json:"tool"`
	Command string `json:"command,omitempty"`
	File    string `json:"file,omitempty"`
	Failed  bool   `json:"failed"`
	// Error is the result's text when the call failed.
	Error string `json:"error,omitempty"`
	// Source is where the call was seen: "transcript" or "hook".
	Source string `json:"source,omitempty"`
}
