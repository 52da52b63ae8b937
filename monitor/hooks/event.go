// Package hooks reads Claude Code hook payloads (and Qwen Code's, which
// are the same, the Codex and Gemini CLIs' permission hooks', GitHub
// Copilot CLI's, the Cline CLI's, and the events of system3's opencode
// plugin), produces the hook settings that send them to system3 (the
// Cline CLI's hook files, and the plugin), merges those settings into a
// settings file, and keeps the spool where hook events wait while no
// system3 daemon runs.
package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
)

// Events lists every event Settings registers, in a stable order.
var Events = []string{
	api.SessionStart, api.UserPromptSubmit, api.PreToolUse, api.PermissionRequest, api.PostToolUse, api.PostToolUseFailure,
	api.Notification, api.Stop, api.StopFailure, api.TaskCreated, api.TaskCompleted, api.SessionEnd,
}

// copilotNames are the GitHub Copilot CLI hook events system3 installs
// (CopilotEvents, the keys of its settings' "hooks"), by the names
// system3 keeps them under: its agentStop says what Claude Code's Stop
// says, with Claude Code's stop_hook_active, and its permissionRequest
// keeps its own name because it is answered in its own words. (Its
// notification names itself as Claude Code's Notification.)
var copilotNames = map[string]string{
	api.CopilotPermissionRequest: api.CopilotPermissionRequest,
	"agentStop":                  api.Stop,
}

// MaxPayload bounds one payload. Payloads carry tool inputs and responses
// (a whole file read), so the bound is generous; a larger one is refused.
const MaxPayload = 8 << 20

// Bounds on the text an Event keeps, so events stay small on the socket and
// in the spool whatever the tool printed.
const (
	maxSummary = 300
	maxField   = 4 << 10
)

// MaxToolInput bounds the exact tool input a PermissionRequest event
// carries (ToolInputJSON). A larger input is not kept: the approval policy
// decides nothing about it, and the agent shows its own dialog.
const MaxToolInput = 64 << 10

// ErrTooLarge matches Parse's error for a payload over MaxPayload.
var ErrTooLarge = errors.New("hook payload too large")

// payload is Claude Code's hook input, as far as system3 reads it.
type payload struct {
	SessionID        string          `json:"session_id"`
	TranscriptPath   string          `json:"transcript_path"`
	Cwd              string          `json:"cwd"`
	Name             string          `json:"hook_event_name"`
	NotificationType string          `json:"notification_type"`
	Message          string          `json:"message"`
	Error            json.RawMessage `json:"error"`
	ErrorDetails     json.RawMessage `json:"error_details"`
	LastMessage      string          `json:"last_assistant_message"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	ToolResponse     json.RawMessage `json:"tool_response"`
	ToolUseID        string          `json:"tool_use_id"`
	IsInterrupt      bool            `json:"is_interrupt"`
	TaskID           json.RawMessage `json:"task_id"`
	TaskSubject      string          `json:"task_subject"`
	Reason           string          `json:"reason"`
	StopHookActive   bool            `json:"stop_hook_active"`
	MCPContext       struct {
		ServerName string `json:"server_name"`
		ToolName   string `json:"tool_name"`
	} `json:"mcp_context"`

	// GitHub Copilot CLI's words (1.0.102): its permissionRequest names
	// itself in hookName and carries toolInput, its preToolUse and
	// postToolUse carry toolArgs, its agentStop names no event.
	HookName          string          `json:"hookName"`
	CopilotSession    string          `json:"sessionId"`
	CopilotTranscript string          `json:"transcriptPath"`
	CopilotTool       string          `json:"toolName"`
	CopilotInput      json.RawMessage `json:"toolInput"`
	CopilotArgs       json.RawMessage `json:"toolArgs"`

	// opencode's, from system3's plugin: an event of its bus
	// (parseOpencode).
	OpencodeType       string          `json:"type"`
	OpencodeProperties json.RawMessage `json:"properties"`
}

// Parse reads one Claude Code hook payload. It is pure: the caller sets
// Pane, and Received with Stamp. A payload that is not a JSON object
// naming its event, or is larger than MaxPayload, is an error that says
// so.
func Parse(data []byte) (api.HookEvent, error) { return ParseAs(data, "") }

// maxLate is how long before it was read a payload may say its event
// happened: system3's opencode plugin runs at most 32 hook commands in
// turn, each killed after 5 s.
const maxLate = 3 * time.Minute

// Stamp sets ev.Received to when its event happened: the time its payload
// gave (system3's opencode plugin sends one, since an event may wait there
// behind others) when that is before read and at most maxLate before,
// else read, when system3 hook read the payload.
func Stamp(ev api.HookEvent, read time.Time) api.HookEvent {
	if at := ev.Received; at.IsZero() || !at.Before(read) || read.Sub(at) > maxLate {
		ev.Received = read
	}
	return ev
}

// ParseAs is Parse for a payload that may not name its event: event is
// the name the hook's command gave (system3 hook --event NAME), taken
// when the payload names none. GitHub Copilot CLI's payloads are read in
// its words, and its events take the names system3 keeps them under
// (copilotNames): the agentStop its command names becomes a Stop. The
// Cline CLI's payloads name their event in hookName, in its words
// (parseCline). An opencode event from system3's plugin ({"type",
// "properties"}) takes the name of Claude Code's event that says the
// same (parseOpencode).
func ParseAs(data []byte, event string) (api.HookEvent, error) {
	if len(data) > MaxPayload {
		return api.HookEvent{}, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, len(data), MaxPayload)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return api.HookEvent{}, errors.New("empty hook payload: Claude Code sends one JSON object on stdin")
	}
	if data[0] != '{' {
		return api.HookEvent{}, errors.New("hook payload is not a JSON object: Claude Code sends one JSON object on stdin")
	}
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return api.HookEvent{}, fmt.Errorf("hook payload is not valid JSON: %v", err)
	}
	name := strings.TrimSpace(firstOf(p.Name, p.HookName, event))
	if p.Name == "" && isCline(p.HookName) {
		return parseCline(data)
	}
	if name == "" && p.OpencodeType != "" && len(p.OpencodeProperties) > 0 {
		return parseOpencode(data)
	}
	if name == "" {
		return api.HookEvent{}, errors.New(`hook payload has no "hook_event_name" and its command names no event (system3 hook --event NAME); is this an agent's hook?`)
	}
	if n, ok := copilotNames[name]; ok {
		name = n
	}
	input := p.ToolInput
	for _, raw := range []json.RawMessage{p.CopilotInput, p.CopilotArgs} {
		if len(bytes.TrimSpace(input)) == 0 {
			input = raw
		}
	}
	ev := api.HookEvent{
		Name:             clip(name, 64),
		SessionID:        clip(firstOf(p.SessionID, p.CopilotSession), 256),
		TranscriptPath:   clip(firstOf(p.TranscriptPath, p.CopilotTranscript), maxField),
		Cwd:              clip(p.Cwd, maxField),
		NotificationType: clip(p.NotificationType, 64),
		Message:          clip(oneLine(p.Message), maxSummary),
		Error:            clip(text(p.Error), maxField),
		ErrorDetails:     clip(text(p.ErrorDetails), maxSummary),
		LastMessage:      clip(oneLine(p.LastMessage), maxSummary),
		ToolName:         clip(firstOf(p.ToolName, p.CopilotTool), 128),
		ToolInput:        summarizeInput(input),
		ToolResponse:     clip(oneLine(text(p.ToolResponse)), maxSummary),
		ToolUseID:        clip(p.ToolUseID, 128),
		IsInterrupt:      p.IsInterrupt,
		TaskID:           clip(text(p.TaskID), 64),
		TaskSubject:      clip(oneLine(p.TaskSubject), maxSummary),
		Reason:           clip(p.Reason, 64),
		StopHookActive:   p.StopHookActive,
	}
	if ev.AsksPermission() {
		ev.ToolInputJSON = exactInput(input)
		ev.MCPServer, ev.MCPTool = clip(p.MCPContext.ServerName, 128), clip(p.MCPContext.ToolName, 128)
	}
	return ev, nil
}

// firstOf is the first of vals that is not empty.
func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// text is a JSON value as text: a string's contents, anything else compact.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// exactInput is a tool input as compact JSON, "" when it is not a JSON
// object or is larger than MaxToolInput.
func exactInput(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil || b.Len() > MaxToolInput || !utf8.Valid(b.Bytes()) {
		return ""
	}
	return b.String()
}

// summarizeInput reduces a tool input to what identifies the call: a
// command, a file, a pattern, else the compact JSON, on one line.
func summarizeInput(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"command", "file_path", "notebook_path", "pattern", "url", "query", "subject", "prompt", "description"} {
			if v := text(m[k]); v != "" {
				return clip(oneLine(v), maxSummary)
			}
		}
	}
	return clip(oneLine(text(raw)), maxSummary)
}

// oneLine joins the lines of s with " · ".
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return strings.TrimSpace(s)
	}
	var parts []string
	for l := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " · ")
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut, and
// makes it valid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
