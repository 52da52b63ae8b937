package claudetest

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/clitest"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

var saveFetch = flag.Bool("update-fetch-capture", false, "save the WebFetch permission screen to monitor/testdata/captures/claude/permission_fetch.txt")

// TestRealClaudeWebFetch: the WebFetch permission of the real CLI ("Do you
// want to allow Claude to fetch this content?", which ends with its last
// option instead of "Esc to cancel") is awaiting_input/permission with its
// question, options and what is fetched, and the keys system3 presses for
// "1" answer it.
func TestRealClaudeWebFetch(t *testing.T) {
	t.Parallel()
	fakeAPI := NewFakeAPI(t, Rule{Contains: "fetch-docs", Steps: []Step{
		{Text: "Fetching the docs.", Tool: Tool("WebFetch", map[string]string{"url": "https://example.com/docs", "prompt": "Summarise the page"})},
		{Text: "Fetched."},
	}})
	home := ""
	if *saveFetch {
		// A fixed HOME keeps the paths on screen the same in every capture.
		home = "/tmp/system3-claude-fetch-capture"
		os.RemoveAll(home)
		t.Cleanup(func() { os.RemoveAll(home) })
	}
	s := Start(t, Options{API: fakeAPI, Home: home, Args: []string{"--permission-mode", "default"}})
	e, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	s.Send("fetch-docs please")
	var r rules.Result
	screen := s.WaitFor("the fetch permission classified", 0, func(sc string) bool {
		r = e.Classify(rules.Input{Screen: sc, Processes: []string{"claude"}})
		return r.State == api.AwaitingInput
	})
	want := []string{"Yes", "Yes, and don't ask again for example.com", "No, and tell Claude what to do differently (esc)"}
	if r.Kind != "permission" || r.Rule != "claude.permission" || r.Question != "Do you want to allow Claude to fetch this content?" ||
		!slices.Equal(r.Options, want) || !strings.Contains(r.Detail, "example.com") {
		t.Fatalf("fetch permission = %+v", r)
	}
	if *saveFetch {
		clitest.Captures{Dir: capturesDir}.Save(t, "permission_fetch.txt", screen)
	}
	keys, err := agents.Lookup("claude").KeysOrDefault().Choose(agent.Prompt{Kind: r.Kind, Options: r.Options}, 0)
	if err != nil || !slices.Equal(keys, []tmux.Key{tmux.Key1}) {
		t.Fatalf("keys for 1 = %q, %v", keys, err)
	}
	s.WaitStable(300*time.Millisecond, 0)
	s.Keys("1")
	// The answer lets the tool run (it fails offline): its result is the
	// next request's latest turn, and the dialog is gone.
	s.WaitFor("the fetch's result at the API", 0, func(sc string) bool {
		return len(fakeAPI.MainPrompts()) >= 2 && !strings.Contains(sc, "fetch this content?")
	})
}
