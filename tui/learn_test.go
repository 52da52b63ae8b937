package tui

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
)

// fixtureLearn is a learning store of two domains' capabilities,
// patterns and outcomes.
func fixtureLearn() *facadetest.Learner {
	crit := func(n int) []api.Criterion {
		out := make([]api.Criterion, 5)
		for i := range n {
			out[i].Evidenced = true
		}
		return out
	}
	l := &facadetest.Learner{}
	l.SetSummary(api.LearnSummary{
		Capabilities: []api.Capability{
			{Domain: "auth", Attempts: 3, Successes: 2, Confidence: 0.6, Evidence: "2 successful initiatives out of 3"},
			{Domain: "database", Attempts: 1, Successes: 0, Partials: 1, Confidence: 0.33, Evidence: "0 successful initiatives out of 1 (1 partial)"},
		},
		Patterns: []api.LearnItem{
			{ID: 1, Kind: api.LearningPattern, Domain: "auth", Seen: 2, Text: "Keep OAuth tokens in the session store, never in cookies"},
			{ID: 4, Kind: api.LearningPattern, Domain: "database", Seen: 1, Text: "Run migrations in a transaction and test the rollback"},
		},
		AntiPatterns: []api.LearnItem{
			{ID: 2, Kind: api.LearningAntiPattern, Domain: "auth", Seen: 1, Text: "Refreshing OAuth tokens inside the request handler caused login races"},
		},
		Outcomes: []api.OutcomeRecord{
			{ID: 3, At: now.Add(-5 * time.Minute), Initiative: "index the sessions table", Outcome: "partial", Domain: "database", Validated: true, Criteria: crit(4)},
			{ID: 2, At: now.Add(-2 * time.Hour), Initiative: "add OAuth refresh", Outcome: "failure", Domain: "auth", Criteria: crit(1)},
			{ID: 1, At: now.Add(-26 * time.Hour), Initiative: "add OAuth login to the API", Outcome: "success", Domain: "auth", Validated: true, Criteria: crit(5)},
		},
	})
	return l
}

func TestLearnPanelKeys(t *testing.T) {
	src := fixtureLearn()
	h := newPartsHarness(t, newFixtureService(t), backend.Parts{Learn: src}, Options{}, 100, 30)
	h.press("L")
	if !h.m.learn.open || src.Calls("learnings") != 1 {
		t.Fatalf("L: open %v, reads %d", h.m.learn.open, src.Calls("learnings"))
	}
	v := h.m.View()
	for _, want := range []string{"Learnings · as of 12:00:00", "auth      0.60 ██████░░░░  2 successful initiatives out of 3",
		"✓ [auth ×2] Keep OAuth tokens", "✗ [auth] Refreshing OAuth", "5m ago  partial  database  validated 4/5  index the sessions table",
		"esc back"} {
		if !strings.Contains(v, want) {
			t.Errorf("panel lacks %q:\n%s", want, v)
		}
	}
	// Session keys do nothing under the panel; r reads again; j/k scroll.
	h.press("i", "x", "r")
	if h.m.input != inputNone || len(h.calls()) != 0 || src.Calls("learnings") != 2 {
		t.Fatalf("input %v, calls %+v, reads %d", h.m.input, h.calls(), src.Calls("learnings"))
	}
	h.send(tea.WindowSizeMsg{Width: 100, Height: 12})
	h.press("j", "j")
	if h.m.learn.offset != 2 || !strings.Contains(h.m.View(), "Learnings") {
		t.Fatalf("offset %d", h.m.learn.offset)
	}
	h.press("k")
	if h.m.learn.offset != 1 {
		t.Fatalf("offset %d after k", h.m.learn.offset)
	}
	h.press("esc")
	if h.m.learn.open {
		t.Fatal("esc did not close the panel")
	}
	h.press("L", "L")
	if h.m.learn.open {
		t.Fatal("L did not close the panel")
	}

	// A store that cannot be read says so.
	src.Fail("learnings", errors.New("database is locked"))
	h.press("L")
	if v := h.m.View(); !strings.Contains(v, "cannot read the learning store: database is locked") {
		t.Fatalf("error not shown:\n%s", v)
	}

	// Without a store, L says there is none.
	h = newHarness(t, newFixtureService(t), Options{}, 100, 30)
	h.press("L")
	if h.m.learn.open || h.statusText() != "no learning store in this dashboard" {
		t.Fatalf("open %v, status %q", h.m.learn.open, h.statusText())
	}
}

func TestLearnPanelEmpty(t *testing.T) {
	h := newPartsHarness(t, newFixtureService(t), backend.Parts{Learn: &facadetest.Learner{}}, Options{}, 100, 30)
	h.press("L")
	if v := h.m.View(); !strings.Contains(v, "Nothing learnt yet.") || !strings.Contains(v, "system3 outcome report") {
		t.Fatalf("empty panel:\n%s", v)
	}
}

// TestLearnGolden draws the learnings panel as a real program at the
// golden sizes; `go test ./tui -run TestLearnGolden -update` rewrites it.
func TestLearnGolden(t *testing.T) {
	for _, size := range goldenSizes {
		t.Run(fmt.Sprintf("learnings_%dx%d", size[0], size[1]), func(t *testing.T) {
			m := New(backend.New(fixtureWithWakes(t), backend.Parts{Learn: fixtureLearn()}), Options{Clock: fixedClock})
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size[0], size[1]))
			waitOut := func(want ...string) {
				teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
					for _, w := range want {
						if !bytes.Contains(b, []byte(w)) {
							return false
						}
					}
					return true
				}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
			}
			waitOut(ready...)
			tm.Send(keyMsg("L"))
			waitOut("as of 12:00:00")
			tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
			final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
			if !ok {
				t.Fatal("the final model is not a Model")
			}
			golden.RequireEqual(t, []byte(final.View()))
		})
	}
}
