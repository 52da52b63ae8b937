package codextest

import (
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/clitest"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
)

// TestRealCodexModelNotice: configured with a model the CLI knows a newer
// one for (gpt-5.6-sol), Codex opens on a notice offering it ("› 1. Try new
// model  2. Use existing model"); that is awaiting_input with the notice's
// title and options, and the keys system3 presses for "2" keep the model
// and close it.
func TestRealCodexModelNotice(t *testing.T) {
	t.Parallel()
	classify := classifier(t)
	s := Start(t, Options{Args: []string{"-m", "gpt-5.6-sol"}, ReadyText: "Try new model", Home: captureHomeIf(t, "notice")})
	r := waitClass(t, s, classify, api.AwaitingInput, "other", "codex.model_notice")
	if r.Question != "Meet GPT-6 Sol" || !slices.Equal(r.Options, []string{"Try new model", "Use existing model"}) {
		t.Fatalf("model notice = %+v", r)
	}
	if *updateCaptures {
		captures.Save(t, "model_notice.txt", s.Capture())
	}
	keys, err := agents.Lookup("codex").KeysOrDefault().Choose(agent.Prompt{Kind: r.Kind, Options: r.Options}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		s.Keys(string(k))
	}
	if sc := s.WaitFor("the composer", 0, IsReady); strings.Contains(sc, "Try new model") {
		t.Errorf("the notice is still up after choosing Use existing model:\n%s", sc)
	}
	waitClass(t, s, classify, api.Idle, "", "codex.idle")
}

// captureHomeIf is a fixed HOME while captures are saved, else a fresh one.
func captureHomeIf(t *testing.T, name string) string {
	t.Helper()
	if !*updateCaptures {
		return ""
	}
	c := clitest.Captures{Dir: capturesDir, Home: captureHome + "-" + name}
	c.Begin(t)
	return c.Home
}
