package api

import (
	"encoding/json"
	"time"
)

// The hook events system3 consumes (Claude Code's hook_event_name values).
const (
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
	UserPromptSubmit   = "UserPromptSubmit"
	PreToolUse         = "PreToolUse"
	PermissionRequest  = "PermissionRequest"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	Notification       = "Notification"
	Stop               = "Stop"
	StopFailure        = "StopFailure"
	TaskCreated        = "TaskCreated"
	TaskCompleted      = "TaskCompleted"

	// BeforeTool is the Gemini CLI's hook event before a tool runs
	// (0.61): the approval policy decides it as Claude Code's
	// PermissionRequest, and answers in Gemini's words (DecisionReply).
	BeforeTool = "BeforeTool"

	// CopilotPermissionRequest is GitHub Copilot CLI's hook event before
	// its permission dialog (1.0.102), named in its words: the approval
	// policy decides it as Claude Code's PermissionRequest, and answers
	// in Copilot's (DecisionReply).
	CopilotPermissionRequest = "permissionRequest"

	// ClineToolCall is the Cline CLI's hook event before a tool runs and
	// before its approval dialog (3.0.65: its PreToolUse hook, whose
	// payload names it tool_call), named in its words: the approval
	// policy decides it, but Cline's reply can only cancel, so only a
	// deny is answered (DecisionReply) and an allow or an ask leaves the
	// call to Cline's own dialog (CanAllow).
	ClineToolCall = "tool_call"
)

// HookEvent is one hook event as system3 keeps it: the fields it uses from
// Claude Code's payload, tool input and output reduced to one-line
// summaries, plus the pane the hook ran in and when it was received.
type HookEvent struct {
	Name           string `json:"hook_event_name"`
	SessionID      string `json:"session_id,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	Cwd            string `json:"cwd,omitempty"`

	// NotificationType and Message: Notification ("permission_prompt",
	// "idle_prompt", ...).
	NotificationType string `json:"notification_type,omitempty"`
	Message          string `json:"message,omitempty"`
	// Error: StopFailure's error kind ("rate_limit", "server_error"), or
	// PostToolUseFailure's error text. ErrorDetails: StopFailure's details.
	Error        string `json:"error,omitempty"`
	ErrorDetails string `json:"error_details,omitempty"`
	// LastMessage: StopFailure's last_assistant_message, the error as the
	// agent showed it ("You've hit your 5-hour limit · resets 8:10pm
	// (UTC)" for a usage limit).
	LastMessage string `json:"last_message,omitempty"`
	// Tool events: the tool, its input and its response, summarised.
	ToolName     string `json:"tool_name,omitempty"`
	ToolInput    string `json:"tool_input,omitempty"`
	ToolResponse string `json:"tool_response,omitempty"`
	// ToolInputJSON is the tool's input exactly as the agent sent it (a
	// JSON object, compact), kept for PermissionRequest only and only up to
	// the hooks package's MaxToolInput bytes: the approval policy decides on it.
	ToolInputJSON string `json:"tool_input_json,omitempty"`
	// MCPServer and MCPTool: a Gemini BeforeTool's mcp_context, the
	// server and the tool of an MCP tool call (Gemini names the call
	// mcp_<server>_<tool>, which does not tell them apart).
	MCPServer string `json:"mcp_server,omitempty"`
	MCPTool   string `json:"mcp_tool,omitempty"`
	// ToolUseID pairs the event with the tool call in the transcript.
	ToolUseID   string `json:"tool_use_id,omitempty"`
	IsInterrupt bool   `json:"is_interrupt,omitempty"`
	// Task events.
	TaskID      string `json:"task_id,omitempty"`
	TaskSubject string `json:"task_subject,omitempty"`
	// Reason: SessionEnd's reason ("clear", "logout", "prompt_input_exit").
	Reason string `json:"reason,omitempty"`
	// StopHookActive: a Stop event of a turn that goes on because a Stop
	// hook blocked its end before (Claude Code's stop_hook_active).
	StopHookActive bool `json:"stop_hook_active,omitempty"`
	// Blocked is set by the daemon, never read from a payload: a Stop
	// event its reply blocked, so the turn goes on.
	Blocked bool `json:"-"`

	// Pane is the tmux pane the hook ran in ($TMUX_PANE), "" outside tmux.
	Pane string `json:"pane,omitempty"`
	// Received is when `system3 hook` read the payload.
	Received time.Time `json:"received"`
	// Proof is the event signed with its session's hook token (see the hooks package's Sign),
	// "" when the hook had no token.
	Proof string `json:"proof,omitempty"`

	// Sender is set by the receiver: how the event came (see HookSender).
	Sender HookSender `json:"-"`
}

// AsksPermission reports whether the event is a tool call the approval
// policy may decide before it runs: Claude Code's and Codex's
// PermissionRequest, the Gemini CLI's BeforeTool, GitHub Copilot CLI's
// permissionRequest, the Cline CLI's tool_call. Its hook waits for the
// decision.
func (e HookEvent) AsksPermission() bool {
	return e.Name == PermissionRequest || e.Name == BeforeTool || e.Name == CopilotPermissionRequest || e.Name == ClineToolCall
}

// CanAllow reports whether the agent's reply to the event can let a tool
// call run: every AsksPermission event's but the Cline CLI's tool_call,
// whose reply can cancel the call and nothing else.
func (e HookEvent) CanAllow() bool { return e.Name != ClineToolCall }

// DenyStopsTurn reports whether a deny of the event stops the agent's
// whole turn, with no hook of its own to say so: the Cline CLI's
// tool_call, whose cancel ends the turn.
func (e HookEvent) DenyStopsTurn() bool { return e.Name == ClineToolCall }

// PolicyOnly reports whether the event is for the approval policy alone:
// the Gemini CLI's BeforeTool, GitHub Copilot CLI's permissionRequest and
// the Cline CLI's tool_call. The monitors take nothing from it: the agent's dialog, when one shows,
// is read from the screen, as a prompt with the identity an answer
// checks, so it raises one wake; and it is never spooled, since nothing
// would read it later.
func (e HookEvent) PolicyOnly() bool {
	return e.Name == BeforeTool || e.Name == CopilotPermissionRequest || e.Name == ClineToolCall
}

// HookSender says how an event reached system3. The receiver sets it; it never
// travels in JSON, so no sender can choose it.
type HookSender struct {
	// Via is "socket" or "spool"; "" means an in-process caller that
	// vouches for the event itself.
	Via string
	// PID is the socket peer's process id as the kernel reports it (0:
	// unknown); Exe its executable, for the log.
	PID int
	Exe string
}

// HookSender.Via values.
const (
	ViaSocket = "socket"
	ViaSpool  = "spool"
)

// HookToolCall is one finished tool call as PostToolUse and PostToolUseFailure
// report it: what a coaching engine observes.
type HookToolCall struct {
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
func (e HookEvent) ToolCall() (HookToolCall, bool) {
	if e.Name != PostToolUse && e.Name != PostToolUseFailure {
		return HookToolCall{}, false
	}
	tc := HookToolCall{ID: e.ToolUseID, Pane: e.Pane, SessionID: e.SessionID, Tool: e.ToolName, Input: e.ToolInput, At: e.Received}
	if e.Name == PostToolUseFailure {
		tc.Failed, tc.Error = true, e.Error
	} else {
		tc.Response = e.ToolResponse
	}
	return tc, true
}

// Block is the decision of a Stop hook that makes Claude Code go on
// instead of ending its turn, with the hook's reason as its next
// instruction.
const Block = "block"

// HookReply is what system3 answers a hook event with, printed by `system3
// hook` as the hook's output for Claude Code. It is empty for almost every
// event: the hook then prints nothing and Claude Code carries on as if
// there were no hook. A Stop event of a configured supervisor pane may be
// answered with Decision "block" and the next wake as Reason: Claude Code
// then continues with the wake instead of going idle.
//
// A PermissionRequest decided by the approval policy (or by whoever
// answered the policy's ask) is answered with HookSpecificOutput: Claude
// Code then allows or denies that one tool call without showing its
// dialog. GitHub Copilot CLI's permissionRequest is answered with
// Behavior and Message at the top level, its own form. The Cline CLI's
// tool_call is refused with Cancel and ErrorMessage, its own form: Cline
// then stops the turn (it has no allow).
type HookReply struct {
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// HookSpecificOutput is a PermissionRequest's decision.
	HookSpecificOutput *HookOutput `json:"hookSpecificOutput,omitempty"`
	// Behavior ("allow" or "deny") and Message (what the model is told
	// of a deny): a Copilot permissionRequest's decision.
	Behavior string `json:"behavior,omitempty"`
	Message  string `json:"message,omitempty"`
	// Cancel and ErrorMessage (why): a Cline tool_call refused.
	Cancel       bool   `json:"cancel,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// HookOutput is Claude Code's hookSpecificOutput of a PermissionRequest
// hook.
type HookOutput struct {
	HookEventName string              `json:"hookEventName"`
	Decision      *PermissionDecision `json:"decision,omitempty"`
}

// PermissionDecision decides one permission request: Behavior "allow" or
// "deny", with Message the agent is told when it is denied.
type PermissionDecision struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

// The behaviours of a PermissionDecision. Ask is the Gemini CLI's
// third: show your own dialog.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// Permission is the decision the reply gives a tool call (DecisionReply),
// nil when it gives none.
func (r HookReply) Permission() *PermissionDecision {
	if r.Behavior != "" {
		return &PermissionDecision{Behavior: r.Behavior, Message: r.Message}
	}
	if r.Cancel {
		return &PermissionDecision{Behavior: Deny, Message: r.ErrorMessage}
	}
	if r.HookSpecificOutput == nil {
		switch r.Decision {
		case Allow, Deny, Ask:
			return &PermissionDecision{Behavior: r.Decision, Message: r.Reason}
		}
		return nil
	}
	return r.HookSpecificOutput.Decision
}

// Empty reports whether the reply says nothing.
func (r HookReply) Empty() bool {
	return r.Decision == "" && r.Reason == "" && r.HookSpecificOutput == nil && r.Behavior == "" && r.Message == "" &&
		!r.Cancel && r.ErrorMessage == ""
}

// Output is the reply as Claude Code reads a hook's standard output: one
// JSON object and a newline, or nothing for an empty reply.
func (r HookReply) Output() []byte {
	if r.Empty() {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}
