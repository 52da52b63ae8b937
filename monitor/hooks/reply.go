package hooks

import (
	"encoding/json"
	"strings"
)

// Block is the decision of a Stop hook that makes Claude Code go on
// instead of ending its turn, with the hook's reason as its next
// instruction.
const Block = "block"

// Reply is what system3 answers a hook event with, printed by `system3
// hook` as the hook's output for Claude Code. It is empty for almost every
// event: the hook then prints nothing and Claude Code carries on as if
// there were no hook. A Stop event of a configured supervisor pane may be
// answered with Decision "block" and the next wake as Reason: Claude Code
// then continues with the wake instead of going idle.
//
// A PermissionRequest decided by the approval policy (or by whoever
// answered the policy's ask) is answered with HookSpecificOutput: Claude
// Code then allows or denies that one tool call without showing its
// dialog.
type Reply struct {
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// HookSpecificOutput is a PermissionRequest's decision.
	HookSpecificOutput *HookOutput `json:"hookSpecificOutput,omitempty"`
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

// PermissionReply is the reply that decides a PermissionRequest: behavior
// "allow", or "deny" with the message the agent is given. Any other
// behaviour is the empty reply: the agent shows its own dialog.
func PermissionReply(behavior, message string) Reply {
	switch behavior {
	case Allow:
		message = ""
	case Deny:
		if strings.TrimSpace(message) == "" {
			message = "The request was denied."
		}
	default:
		return Reply{}
	}
	return Reply{HookSpecificOutput: &HookOutput{HookEventName: PermissionRequest, Decision: &PermissionDecision{Behavior: behavior, Message: message}}}
}

// DecisionReply is the reply that decides a tool call the approval
// policy was asked about (an event whose AsksPermission), in the words of
// the agent that sent it: behavior "allow", "deny" with the message the
// agent is given, or anything else for no decision, which lets the agent
// show its own dialog.
//
// For Claude Code's and Codex's PermissionRequest that is
// PermissionReply, and no decision is the empty reply: the dialog those
// agents were about to draw shows. The Gemini CLI's BeforeTool runs before
// every call of the tools it is installed for, whether Gemini would ask or
// not, and reads {"decision": "allow"}, {"decision": "deny", "reason":
// message} or {"decision": "ask"}; no decision is "ask", which makes
// Gemini show its own dialog whatever its approval mode, so that what no
// rule decides is asked about and never runs unseen in yolo mode.
func DecisionReply(event, behavior, message string) Reply {
	if event != BeforeTool {
		return PermissionReply(behavior, message)
	}
	switch behavior {
	case Allow:
		return Reply{Decision: Allow}
	case Deny:
		if strings.TrimSpace(message) == "" {
			message = "The request was denied."
		}
		return Reply{Decision: Deny, Reason: message}
	}
	return Reply{Decision: Ask}
}

// Permission is the decision the reply gives a tool call (DecisionReply),
// nil when it gives none.
func (r Reply) Permission() *PermissionDecision {
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
func (r Reply) Empty() bool {
	return r.Decision == "" && r.Reason == "" && r.HookSpecificOutput == nil
}

// Output is the reply as Claude Code reads a hook's standard output: one
// JSON object and a newline, or nothing for an empty reply.
func (r Reply) Output() []byte {
	if r.Empty() {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}
