package fakeagent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

var t0 = time.Date(2026, 3, 4, 5, 32, 0, 0, time.UTC)

// capture is what `tmux capture-pane -p -J` would return for the frame:
// trailing blanks cut, blank lines at the bottom dropped.
func capture(m *model, w, h int) string {
	rows, _, _ := m.render(w, h, t0.Add(3*time.Second))
	var out []string
	for _, r := range rows {
		if width(r.plain) > w {
			panic(fmt.Sprintf("row wider than %d: %q", w, r.plain))
		}
		out = append(out, strings.TrimRight(r.plain, " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n")
}

func baseModel() *model {
	m := &model{title: "Claude Code v2.1.330 · system3 fake agent", subtitle: "scripted demo · no model, no network", dir: "~/demo/billing"}
	m.add(&block{kind: bPrompt, text: "Add an invoice_totals column for PRD-BILLING, run the migration on staging, and prepare the backfill"})
	m.add(&block{kind: bTool, text: "Bash(ls db/migrations)", output: []string{"0039_add_currency.sql", "0040_invoice_status_index.sql"}})
	m.add(&block{kind: bSay, text: "I'll add the migration as 0042, then run it on staging. The quick brown fox jumps over the lazy dog, several times, so that this line wraps at any width."})
	return m
}

func withTasks(m *model) *model {
	m.tasks = []taskView{{"Write the migration", statusCompleted}, {"Run the migration on staging", statusInProgress}, {"Add the backfill script", statusPending}}
	return m
}

// longHistory pushes the live area to the bottom of the screen.
func longHistory(m *model) *model {
	for i := range 30 {
		m.add(&block{kind: bTool, text: fmt.Sprintf("Read(file%d.go)", i), output: []string{"Read 12 lines"}})
	}
	return m
}

type want struct {
	state    api.State
	kind     string
	rule     string
	question string
	options  []string
}

func TestScreensClassifyAsIntended(t *testing.T) {
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	working := func(m *model) *model {
		m.mode = modeWorking
		m.spin = spinner{verb: "Running the migration on staging", start: t0, tokens: 1234, tip: tips[0]}
		return m
	}
	permission := func(m *model) *model {
		m.add(&block{kind: bTool, text: "Run the migration on staging", output: []string{"$ npm run migrate -- --env staging"}})
		m.mode = modePermission
		m.dialog = &dialog{title: "Bash command", desc: "Run the migration on staging", command: "npm run migrate -- --env staging",
			options: []option{{label: "Yes"}, {label: "Yes, and don’t ask again for: npm run migrate *"}, {label: "No"}}}
		return m
	}
	question := func(m *model) *model {
		m.mode = modeQuestion
		m.dialog = &dialog{header: "Database", question: "Which database should we use?",
			options: append(slices.Clone(databases), option{label: "Type something."}, option{label: "Chat about this"})}
		return m
	}
	permOpts := []string{"Yes", "Yes, and don’t ask again for: npm run migrate *", "No"}
	questionOpts := []string{"Postgres", "SQLite", "Redis", "Type something.", "Chat about this"}
	tests := []struct {
		name string
		m    *model
		want want
	}{
		{"fresh idle", &model{title: "Claude Code v2.1.330", dir: "~"}, want{state: api.Idle, rule: "claude.idle"}},
		{"idle after turn", func() *model {
			m := withTasks(baseModel())
			m.add(&block{kind: bDone, text: "Worked for 12s · done 5:32 AM"})
			m.panel = true
			return m
		}(), want{state: api.Idle, rule: "claude.idle"}},
		{"idle with typed text", func() *model { m := baseModel(); m.input = []rune("use the staging replica"); return m }(), want{state: api.Idle, rule: "claude.idle"}},
		{"interrupted", func() *model {
			m := withTasks(baseModel())
			m.add(&block{kind: bInterrupted, attached: true})
			return m
		}(), want{state: api.Idle, kind: "interrupted", rule: "claude.interrupted"}},
		{"declined permission", func() *model {
			m := withTasks(baseModel())
			m.add(&block{kind: bDidNotRun, text: "$ npm run migrate -- --env staging"})
			m.add(&block{kind: bInterrupted, attached: true})
			return m
		}(), want{state: api.Idle, kind: "interrupted", rule: "claude.interrupted"}},
		{"working", working(baseModel()), want{state: api.Working, rule: "claude.working_footer"}},
		{"working with tasks", working(withTasks(baseModel())), want{state: api.Working, rule: "claude.working_footer"}},
		{"working, long history", working(longHistory(withTasks(baseModel()))), want{state: api.Working, rule: "claude.working_footer"}},
		{"working, tool running", func() *model {
			m := working(baseModel())
			m.add(&block{kind: bTool, text: "Bash(go test ./...)", output: []string{"Running…"}})
			return m
		}(), want{state: api.Working, rule: "claude.working_footer"}},
		{"retrying", func() *model {
			m := withTasks(baseModel())
			m.mode = modeRetrying
			m.retry = retry{err: "500 Internal server error", attempt: 3, max: 10, until: t0.Add(5 * time.Second)}
			return m
		}(), want{state: api.Error, kind: "api_error", rule: "claude.api_retry"}},
		{"retry in flight", func() *model {
			m := baseModel()
			m.mode = modeRetrying
			m.retry = retry{err: "API error", attempt: 1, max: 10, inFlight: true}
			return m
		}(), want{state: api.Error, kind: "api_error", rule: "claude.api_retry"}},
		{"final API error", func() *model {
			m := withTasks(baseModel())
			m.add(&block{kind: bAPIError, text: apiError500})
			m.placeholder = "Resend your message to try again"
			return m
		}(), want{state: api.Error, kind: "api_error", rule: "claude.api_error"}},
		{"permission", permission(baseModel()), want{state: api.AwaitingInput, kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", options: permOpts}},
		{"permission with tasks", permission(withTasks(baseModel())), want{state: api.AwaitingInput, kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", options: permOpts}},
		{"permission, long history", permission(longHistory(withTasks(baseModel()))), want{state: api.AwaitingInput, kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", options: permOpts}},
		{"question", question(baseModel()), want{state: api.AwaitingInput, kind: "question", rule: "claude.question", question: "Which database should we use?", options: questionOpts}},
		{"question with tasks", question(withTasks(longHistory(baseModel()))), want{state: api.AwaitingInput, kind: "question", rule: "claude.question", question: "Which database should we use?", options: questionOpts}},
		{"question, typing", func() *model {
			m := question(baseModel())
			m.dialog.cursor, m.dialog.typing, m.dialog.typed = 3, true, []rune("CockroachDB")
			return m
		}(), want{state: api.AwaitingInput, kind: "question", rule: "claude.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Redis", "CockroachDB", "Chat about this"}}},
	}
	sizes := [][2]int{{100, 30}, {80, 24}, {200, 50}, {60, 40}}
	for _, tt := range tests {
		for _, sz := range sizes {
			t.Run(fmt.Sprintf("%s/%dx%d", tt.name, sz[0], sz[1]), func(t *testing.T) {
				screen := capture(tt.m, sz[0], sz[1])
				res := eng.Classify(rules.Input{Screen: screen, Processes: []string{"system3"}})
				if res.Agent != "claude" || res.AgentBy != "screen" || res.State != tt.want.state || res.Kind != tt.want.kind || res.Rule != tt.want.rule ||
					res.Question != tt.want.question || (tt.want.options != nil && !slices.Equal(res.Options, tt.want.options)) {
					t.Fatalf("classified as %+v, want %+v; screen:\n%s", res, tt.want, screen)
				}
			})
		}
	}
}

func TestRenderFitsTheScreen(t *testing.T) {
	m := longHistory(withTasks(baseModel()))
	m.mode = modeWorking
	m.spin = spinner{verb: "Working", start: t0}
	for _, sz := range [][2]int{{20, 5}, {40, 10}, {100, 30}} {
		rows, row, col := m.render(sz[0], sz[1], t0)
		if len(rows) != sz[1] {
			t.Errorf("%dx%d: %d rows", sz[0], sz[1], len(rows))
		}
		for _, r := range rows {
			if width(r.plain) > sz[0] {
				t.Errorf("%dx%d: row %q is too wide", sz[0], sz[1], r.plain)
			}
		}
		if row < 0 || row >= sz[1] || col < 0 || col > sz[0] || !strings.HasPrefix(rows[row].plain, "❯"+nbsp) {
			t.Errorf("%dx%d: caret at %d,%d", sz[0], sz[1], row, col)
		}
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		text        string
		w           int
		first, rest string
		want        []string
	}{
		{"one two three", 20, "● ", "  ", []string{"● one two three"}},
		{"one two three four", 12, "● ", "  ", []string{"● one two", "  three four"}},
		{"abcdefghijklmnopqrstuvwxyz", 12, "", "", []string{"abcdefghijkl", "mnopqrstuvwx", "yz"}},
		{"a\nb", 10, "⎿ ", "  ", []string{"⎿ a", "  b"}},
		{"", 10, "● ", "  ", []string{"●"}},
	}
	for _, tt := range tests {
		if got := wrap(tt.text, tt.w, tt.first, tt.rest); !slices.Equal(got, tt.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.text, tt.w, got, tt.want)
		}
	}
}
