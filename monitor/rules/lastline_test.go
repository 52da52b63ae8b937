package rules_test

import (
	"os"
	"testing"

	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// The last line a session shows is what the agent is doing now: never its
// chrome (logo, effort indicator, tips, the task panel), and a spinner
// without its elapsed time, which would be stale at once.
func TestLastLineIsWhatTheAgentDoes(t *testing.T) {
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	for fixture, want := range map[string]string{
		"claude/idle.txt":                         "",
		"claude/working_spinner.ansi.txt":         "✢ Noodling…",
		"claude/working_spinner_streaming.txt":    "✢ Noodling…",
		"claude/2.1.329/working_spinner_late.txt": "· Orbiting…",
		"claude/working_tasks.txt":                "✢ Implementing login form…",
		"claude/idle_after_turn.txt":              "✻ Baked for 0s · done 8:58 PM",
	} {
		b, err := os.ReadFile("../testdata/captures/" + fixture)
		if err != nil {
			t.Fatal(err)
		}
		if got := eng.Classify(rules.Input{Screen: string(b), Processes: []string{"claude"}}).LastLine; got != want {
			t.Errorf("%s: last line %q, want %q", fixture, got, want)
		}
	}
}
