package mcpserver

import (
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

func TestSessionRowHint(t *testing.T) {
	s := api.Session{Pane: "%3", Agent: "codex", State: api.Unknown,
		Evidence: api.Evidence{Rule: api.RuleNoMatch, Lines: []string{"no rule matched (codex 0.169.0)"}}}
	if h := rowOf(s).Hint; !strings.Contains(h, "system3 rules capture %3") {
		t.Fatalf("hint = %q", h)
	}
	s.State, s.Evidence.Rule = api.Working, "codex.working"
	if h := rowOf(s).Hint; h != "" {
		t.Fatalf("hint for a known screen = %q", h)
	}
}
