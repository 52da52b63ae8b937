package api

import "time"

// AuditEntry is one audited action, as the audit log keeps it.
type AuditEntry struct {
	Time   time.Time `json:"time"`
	Origin string    `json:"origin"` // "tui", "cli", "mcp:<client name>"
	// Action: inject, keys, answer, interrupt, tool_call; route for an
	// action this machine sent to another host's daemon, which did it and
	// audited it there.
	Action string `json:"action"`
	// Host is the host a routed action went to (Action route); Tool then
	// names the action (answer, inject, interrupt, ack) and Target is
	// HOST:SESSION.
	Host string `json:"host,omitempty"`
	// Target is what the caller named (a session or pane); Pane the pane it
	// resolved to.
	Target string `json:"target,omitempty"`
	Pane   string `json:"pane,omitempty"`
	// ID ties an action's attempt and result entries; Phase says which
	// one this is (empty for a tool call).
	ID    string `json:"id,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Text is exactly what was (or was asked to be) typed. A text that is
	// not valid UTF-8 is written as TextBase64 instead; the audit package's Read
	// decodes it back into Text.
	Text       string   `json:"text,omitempty"`
	TextBase64 string   `json:"text_base64,omitempty"`
	Cut        int      `json:"text_cut_bytes,omitempty"`
	Keys       []string `json:"keys,omitempty"`
	Tool       string   `json:"tool,omitempty"`
	Args       string   `json:"args,omitempty"`
	Result     string   `json:"result,omitempty"`
	Sent       bool     `json:"delivered"`
	Checked    bool     `json:"verified"`
	Error      string   `json:"error,omitempty"`

	// MCPSession is the MCP session a tool call came in on ("stdio" for
	// system3 mcp, the Mcp-Session-Id over HTTP).
	MCPSession string `json:"mcp_session,omitempty"`

	// A permission request the approval policy was asked about (Action
	// "permission", Args the request as JSON, Origin who decided):
	// Decision is what was decided (allow, deny; "" when the agent's own
	// dialog showed), Rule the policy's rule, WaitedMS how long the
	// agent's hook was held for an answer.
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
	WaitedMS int64  `json:"waited_ms,omitempty"`
}
