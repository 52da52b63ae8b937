package hooks

import (
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// PermissionReply is the reply that decides a PermissionRequest: behavior
// "allow", or "deny" with the message the agent is given. Any other
// behaviour is the empty reply: the agent shows its own dialog.
func PermissionReply(behavior, message string) api.HookReply {
	switch behavior {
	case api.Allow:
		message = ""
	case api.Deny:
		if strings.TrimSpace(message) == "" {
			message = "The request was denied."
		}
	default:
		return api.HookReply{}
	}
	return api.HookReply{HookSpecificOutput: &api.HookOutput{HookEventName: api.PermissionRequest, Decision: &api.PermissionDecision{Behavior: behavior, Message: message}}}
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
// GitHub Copilot CLI's permissionRequest reads {"behavior": "allow"} or
// {"behavior": "deny", "message": message}; no decision is the empty
// reply, and Copilot shows its dialog. The Cline CLI's tool_call (its
// PreToolUse hook) can only be cancelled: a deny is {"cancel": true,
// "errorMessage": message}, and an allow, like no decision, is the empty
// reply, which leaves the call to Cline (its dialog, or its auto-approve).
func DecisionReply(event, behavior, message string) api.HookReply {
	switch event {
	case api.BeforeTool:
	case api.ClineToolCall:
		if d := PermissionReply(behavior, message).Permission(); d != nil && d.Behavior == api.Deny {
			return api.HookReply{Cancel: true, ErrorMessage: d.Message}
		}
		return api.HookReply{}
	case api.CopilotPermissionRequest:
		r := PermissionReply(behavior, message)
		if d := r.Permission(); d != nil {
			return api.HookReply{Behavior: d.Behavior, Message: d.Message}
		}
		return api.HookReply{}
	default:
		return PermissionReply(behavior, message)
	}
	switch behavior {
	case api.Allow:
		return api.HookReply{Decision: api.Allow}
	case api.Deny:
		if strings.TrimSpace(message) == "" {
			message = "The request was denied."
		}
		return api.HookReply{Decision: api.Deny, Reason: message}
	}
	return api.HookReply{Decision: api.Ask}
}
