package api

import "time"

// MaxDecisions is how many of a pane's latest permission decisions its
// Session keeps (the audit log keeps every one: system3 audit).
const MaxDecisions = 5

// PolicyDecision is one permission request the approval policy was asked
// about in a pane, and what became of it: who or what decided, by which
// rule, and how long the agent was held.
type PolicyDecision struct {
	// Time is when the agent's hook delivered the request.
	Time time.Time `json:"time"`
	Tool string    `json:"tool"`
	// Input is the request's input as its ask shows it (the command, the
	// file, the URL), cut to MaxDecisionInput bytes.
	Input string `json:"input"`
	// Rule is the rule that decided, or asked; "" when none matched.
	Rule string `json:"rule,omitempty"`
	// Decision is allow or deny; DecisionAsking while the request is held
	// for an answer; "" when nobody decided and the agent's own dialog
	// showed.
	Decision string `json:"decision,omitempty"`
	// By is who decided: PolicyOrigin, the origin of whoever answered an
	// ask, or "nobody".
	By string `json:"by,omitempty"`
	// Wake is the ask's wake, for a request the policy asked about.
	Wake     string `json:"wake,omitempty"`
	WaitedMS int64  `json:"waited_ms,omitempty"`
}

// DecisionAsking is a PolicyDecision's Decision while its request is held
// for an answer on its ask's wake.
const DecisionAsking = "asking"

// MaxDecisionInput caps a PolicyDecision's Input.
const MaxDecisionInput = 300
