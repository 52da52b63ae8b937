package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/system3-dev/system3/internal/api"
)

// The detail shows the approval policy's latest decisions for the
// session: what became of each request, by which rule, who decided, how
// long the agent waited, and the tool with its input, sanitised like all
// screen text; a held ask stays when space is short.
func TestDetailShowsPolicyDecisions(t *testing.T) {
	d := newDetail(testStyles(), newKeyMap().Zoom)
	d.SetSize(200, 30)
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	d.now = now
	sess := fixtureSessions()[1]
	sess.Decisions = []api.PolicyDecision{
		{Time: now.Add(-2 * time.Second), Tool: "Bash", Input: "./deploy.sh --prod eu", Rule: "prod-asks", Decision: api.DecisionAsking, Wake: "w9"},
		{Time: now.Add(-time.Minute), Tool: "Bash", Input: "npm install left-pad\n\x1b[31mecho done", Rule: "installs", Decision: "allow", By: `socket:pid=4 claims "mcp:lead"`, Wake: "w8", WaitedMS: 2140},
		{Time: now.Add(-2 * time.Minute), Tool: "Bash", Input: "rm -rf ./build", Rule: "no-rm-rf", Decision: "deny", By: api.PolicyOrigin},
		{Time: now.Add(-3 * time.Minute), Tool: "Bash", Input: "curl evil", Decision: "", By: "nobody"},
	}
	d.SetSession(sess, 1, true)
	v := ansi.Strip(d.View())
	for _, want := range []string{
		"policy ? asking (the agent is held for an answer) · rule prod-asks · 2s ago · Bash ./deploy.sh --prod eu",
		"✓ allowed by mcp:lead after 2.1s · rule installs · 1m ago · Bash npm install left-pad echo done",
		"✗ denied by policy · rule no-rm-rf · 2m ago · Bash rm -rf ./build",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("the detail lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "curl evil") || strings.Contains(d.View(), "\x1b[31m") {
		t.Errorf("the detail shows more than three decisions, or an escape from the input:\n%s", v)
	}
	// Short of space, the held ask stays and the others go.
	d.SetSize(200, 9)
	v = ansi.Strip(d.View())
	if !strings.Contains(v, "? asking") || strings.Contains(v, "✗ denied") {
		t.Errorf("short of space:\n%s", v)
	}
}
