package hooks

import (
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// Block is the decision of a Stop hook that makes Claude Code go on
// (api.Block).
const Block = api.Block

// Reply is what system3 answers a hook event with (api.HookReply).
type Reply = api.HookReply

// HookOutput is Claude Code's hookSpecificOutput of a PermissionRequest
// hook (api.HookOutput).
type HookOutput = api.HookOutput

// PermissionDecision decides one permission request (api.PermissionDecision).
type PermissionDecision = api.PermissionDecision

// The behaviours of a PermissionDecision (see api.Allow).
const (
	Allow = api.Allow
	Deny  = api.Deny
	Ask   = api.Ask
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
