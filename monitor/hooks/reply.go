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

// The behaviours of a PermissionDecision.
const (
	Allow = "allow"
	Deny  = "deny"
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

// Permission is the decision the reply gives a PermissionRequest, nil
// when it gives none.
func (r Reply) Permission() *PermissionDecision {
	if r.HookSpecificOutput == nil {
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
