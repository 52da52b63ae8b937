package approval

import (
	"encoding/json"
	"testing"
)

// fromCase is a tool call as an agent's hook delivers it, what the
// agent's mapping makes of it and what the example policy decides.
type fromCase struct {
	name           string
	req            Request
	wantTool, orig string
	summary        string
	want           Decision
	rule           string
}

// agentCall is a tool call as agent's hook delivers it.
func agentCall(agent, name string, input map[string]any) Request {
	in, _ := json.Marshal(input)
	return Request{Agent: agent, Session: "work", Cwd: "/w", Tool: name, Input: in}
}

// checkFrom runs each case through from, the agent's mapping named fn,
// and the example policy.
func checkFrom(t *testing.T, fn string, from func(Request) Request, tests []fromCase) {
	t.Helper()
	p := loadExample(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := from(tt.req)
			if req.Tool != tt.wantTool || req.AgentTool != tt.orig || req.Summary() != tt.summary {
				t.Fatalf("%s = tool %q (agent's %q), summary %q", fn, req.Tool, req.AgentTool, req.Summary())
			}
			if v := p.Decide(req); v.Decision != tt.want || v.Rule != tt.rule {
				t.Fatalf("Decide = %+v, want %s by %q", v, tt.want, tt.rule)
			}
		})
	}
}
